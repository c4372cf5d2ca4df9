"""The cascade (issue 36, item 4): `vanilla+cascade` sends an answer to the LLM judge only inside its
band and records which judge decided; the band fitted to a budget; the band file's round trip and
its refusal of another verifier; the verify-default rule (item 5); the method through
Pipeline.verify and /v1/verify.

The routing tests run the shipped verifier (the band is fitted for it) with a scripted LLM judge."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from doubles import ScriptedLLM, yes_no

from verirag.awf.compose import build_method
from verirag.errors import InputError, NotFittedError
from verirag.learned.cascade import CascadeBand, fit_band, shipped_cascade_path
from verirag.llm.metered import MeteredLLM
from verirag.llm.usage import metering
from verirag.types import Passage, VerifyResult
from verirag_lab.pick_default import Measured, pick_verify_default

Q = "When was the Karvel bridge opened?"
A = "The Karvel bridge was opened in 1911."
PASSAGES = [
    Passage("p1", "The Karvel bridge crosses the Orun river. It was opened in 1911 by the mayor of Tessa."),
    Passage("p2", "Tessa is a market town known for its wool trade."),
]


def quiet_build(name: str, llm):
    """The method `name`; the shipped band's nli calibration was fitted for qwen2.5-1.5b, so another
    judge model warns (its calibration weakens), which these tests expect."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return build_method(name, llm)


# ---- the band ----------------------------------------------------------------------------------
def test_the_band_holds_at_most_the_budget_and_sits_where_the_verifier_errs():
    rng = np.random.default_rng(0)
    s = rng.uniform(0, 1, 200)
    y = (s > 0.5).astype(int)
    y[(s > 0.55) & (s < 0.7)] = 0  # the verifier is wrong just above the threshold
    errors = (s >= 0.5) != (y == 1)
    for budget in (0.05, 0.1, 0.2, 0.5):
        low, high = fit_band(s, errors, 0.5, budget)
        inside = (s >= low) & (s <= high)
        assert inside.sum() == int(budget * len(s))
        assert low <= 0.5 <= high
    low, high = fit_band(s, errors, 0.5, 0.1)
    assert 0.48 < low <= 0.5 and high > 0.57  # pushed over the errors above 0.55, not centred on 0.5
    assert fit_band(s, errors, 0.5, 0.0)[0] > fit_band(s, errors, 0.5, 0.0)[1]  # empty band
    with pytest.raises(InputError, match="budget"):
        fit_band(s, errors, 0.5, 1.5)


def synthetic_band(budget=0.2, fingerprints=None) -> CascadeBand:
    rng = np.random.default_rng(1)
    y = rng.integers(0, 2, 300)
    v = np.clip(0.5 + 0.25 * (2 * y - 1) + rng.normal(0, 0.25, 300), 0.01, 0.99)
    j = np.clip(0.5 + 0.3 * (2 * y - 1) + rng.normal(0, 0.2, 300), 0.01, 0.99)
    return CascadeBand(budget=budget, fingerprints=fingerprints).fit(v, j, y)


def test_fit_calibrates_both_judges_onto_one_scale_and_refits_to_another_budget():
    band = synthetic_band()
    assert band.fit_share_ == pytest.approx(0.2)
    assert set(band.calibrations_) == {"verifier", "nli"}
    assert 0.0 < band.combine(0.9) < 1.0
    p, inside = band.route(0.5)
    assert band.combine(0.5, 0.95) == (band.calibrate("nli", 0.95) if inside else p)
    assert band.with_budget(0.05).fit_share_ == pytest.approx(0.05)
    assert band.with_band(0.0, 1.0).fit_share_ == 1.0


def test_the_band_file_round_trips_and_refuses_another_verifier(tmp_path):
    band = synthetic_band(fingerprints={"verifier": "verifier:aaaa", "judge": "j1"})
    path = band.save(tmp_path / "cascade.json", command="test")
    back = CascadeBand.load(path, expect={"verifier": "verifier:aaaa"})
    assert back.band_ == band.band_ and back.calibrations_ == band.calibrations_ and back.budget == 0.2
    assert back.combine(0.4, 0.7) == band.combine(0.4, 0.7)
    assert back.with_budget(0.1).band_ == band.with_budget(0.1).band_  # the held-out scores came along
    with pytest.raises(InputError, match="verirag train cascade"):
        CascadeBand.load(path, expect={"verifier": "verifier:bbbb"})
    with pytest.warns(UserWarning, match="judge"):
        CascadeBand.load(path, expect={"judge": "j2"})
    with pytest.raises(NotFittedError, match="verirag train cascade"):
        CascadeBand().save(tmp_path / "x.json")


def test_the_shipped_band_loads_and_holds_the_default_budget():
    band = CascadeBand.load(shipped_cascade_path())
    assert band.budget == 0.2 and band.fit_share_ <= 0.2 and band.judge == "nli"
    assert band.fingerprints["verifier"].startswith("verifier:")


# ---- routing --------------------------------------------------------------------------------------
def cascade_around(llm, *, inside: bool):
    """vanilla+cascade with a band that holds this answer's verifier score, or one that does not."""
    probe = quiet_build("vanilla+cascade", llm)
    p, _ = probe.predictor.band.route(probe.predictor.verifier_part.verify(Q, A, PASSAGES).score)
    low, high = (p - 0.01, p + 0.01) if inside else (min(p + 0.05, 0.99), 1.0)
    return quiet_build(f"vanilla+cascade(low={low},high={high})", llm)


def test_outside_the_band_the_verifier_decides_and_no_llm_is_called():
    llm = ScriptedLLM(next_token=yes_no(0.9))
    m = cascade_around(MeteredLLM(llm), inside=False)
    with metering() as spent:
        v = m.predictor.verify(Q, A, PASSAGES)
    assert llm.ops == [] and spent.calls == 0
    d = v.cascade
    assert d.decided_by == "verifier" and d.judge_score is None and d.llm_calls == 0 and d.seconds == 0.0
    assert v.score == pytest.approx(d.verifier_calibrated)
    assert v.sentences and v.sentences[0]["text"] == A  # the per-sentence support stays


def test_inside_the_band_the_llm_judge_decides_and_its_cost_is_recorded():
    llm = ScriptedLLM(next_token=yes_no(0.9))
    m = cascade_around(MeteredLLM(llm), inside=True)
    with metering() as spent:
        v = m.predictor.verify(Q, A, PASSAGES)
    d = v.cascade
    assert d.decided_by == "nli" and len(llm.ops) == 2  # nli judges each passage
    assert d.llm_calls == 2 == spent.calls  # counted by the cascade, and still where the caller counts
    assert d.judge_score == pytest.approx(0.9) and v.score == pytest.approx(d.judge_calibrated)
    assert d.verifier_score is not None and d.seconds > 0
    assert v.sentences and v.sentences[0]["text"] == A


def test_the_method_output_and_its_details_carry_the_routing():
    from verirag.awf.trace import Trace

    llm = ScriptedLLM(reply=A, next_token=yes_no(0.2))
    m = cascade_around(llm, inside=True)
    out = m.run(Trace(Q, PASSAGES))
    assert out.cascade.decided_by == "nli" and out.details["cascade"]["decided_by"] == "nli"
    assert out.sentences and out.score == pytest.approx(out.cascade.judge_calibrated)


def test_options_are_checked():
    llm = ScriptedLLM(next_token=yes_no(0.9))
    with pytest.raises(InputError, match="not both"):
        quiet_build("vanilla+cascade(budget=0.1,low=0.4,high=0.6)", llm)
    with pytest.raises(InputError, match="both low and high"):
        quiet_build("vanilla+cascade(low=0.4)", llm)
    with pytest.raises(InputError, match="LLM judge"):
        quiet_build("vanilla+cascade(judge=verifier)", llm)
    assert quiet_build("vanilla+cascade(budget=0.1)", llm).predictor.band.fit_share_ == pytest.approx(0.1)
    judged = quiet_build("vanilla+cascade(judge=llm_judge,low=0.0,high=1.0)", ScriptedLLM(next_token=yes_no(0.7)))
    v = judged.predictor.verify(Q, A, PASSAGES)
    assert v.cascade.decided_by == "llm_judge" and any("no calibration" in w for w in v.warnings)


# ---- the verify-default rule (item 5) ---------------------------------------------------------
def test_the_rule_takes_the_cheapest_method_level_with_nli_everywhere():
    nli = [Measured("vanilla+nli", d, 0.70, 20.0) for d in ("a", "b")]
    level_cheap = [Measured("vanilla+cascade", d, 0.69, 3.0, -0.02) for d in ("a", "b")]
    behind = [Measured("vanilla+verifier", "a", 0.72, 0.1, 0.01), Measured("vanilla+verifier", "b", 0.5, 0.1, -0.2)]
    best, why = pick_verify_default(nli + level_cheap + behind)
    assert best == "vanilla+cascade" and "not level" in why["vanilla+verifier"] and " b" in why["vanilla+verifier"]
    dear = [Measured("vanilla+cascade", d, 0.71, 5.0, 0.0) for d in ("a", "b")]
    assert pick_verify_default(nli + dear)[0] == "vanilla+nli"  # over 1/5 of nli's seconds
    assert pick_verify_default(nli + level_cheap[:1])[0] == "vanilla+nli"  # not measured everywhere


# ---- through the entry points -------------------------------------------------------------------
@pytest.mark.slow
def test_pipeline_verify_and_v1_verify_run_the_cascade():
    from fastapi.testclient import TestClient

    from verirag.awf.pipeline import Pipeline
    from verirag.server import ServiceConfig, VeriragService, create_app

    method = "vanilla+cascade(low=0.0,high=1.0)"  # every answer reaches the judge: the LLM path runs
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        r = Pipeline.from_preset("tiny", method=method).verify(Q, A, PASSAGES)
        assert r.method == method.split("(")[0] or r.method.startswith("vanilla+cascade")
        assert r.cascade is not None and r.cascade.decided_by == "nli" and r.cascade.llm_calls >= 1
        assert r.sentences and r.sentences[0].text == A
        assert VerifyResult.from_dict(r.to_dict()).cascade == r.cascade
        client = TestClient(create_app(VeriragService(ServiceConfig(preset="tiny", warm_up=False))))
        body = {"question": Q, "answer": A, "passages": [p.text for p in PASSAGES], "method": "vanilla+cascade"}
        with client:
            got = client.post("/v1/verify", json=body)
    assert got.status_code == 200, got.text
    out = got.json()
    assert out["method"].startswith("vanilla+cascade") and out["cascade"]["decided_by"] in ("verifier", "nli")
    assert out["sentences"] and out["sentences"][0]["text"] == A
    assert 0.0 <= out["score"] <= 1.0


def test_a_retrained_verifiers_scores_stand_in_for_the_runs_records(tmp_path):
    """`--verifier-scores`: another verifier's scores of the same answers (a rescored file) replace the
    run's verifier column; the same scores give the same pairs, and a file missing an answer, or
    without its header, is refused."""
    import json
    from pathlib import Path

    from verirag_lab.train.cascade import generation_key, paired_scores, read_verifier_scores

    run = Path(__file__).resolve().parents[1] / "data/verifier/own_answers/held-out-nli-qwen2.5-1.5b"
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]
    mine = [r for r in records if r["method"] == "vanilla+verifier" and not r.get("error")]
    f = tmp_path / "rescored.jsonl"
    rows = [{"key": generation_key(r), "score": 1 - r["score"], "seconds": 0.01} for r in mine]
    f.write_text(
        "\n".join(json.dumps(x) for x in [{"header": True, "verifier": {"predictor_digest": "abc"}}, *rows]) + "\n"
    )
    before = paired_scores([run])
    after = paired_scores([run], verifier_scores=read_verifier_scores([f]))
    assert len(after) == len(before) and after.verifier_digest == "abc"
    assert np.allclose(after.verifier, 1 - before.verifier) and np.allclose(after.verifier_seconds, 0.01)
    assert np.array_equal(after.labels, before.labels) and np.allclose(after.judge, before.judge)
    f.write_text("\n".join(json.dumps(x) for x in [{"header": True, "verifier": {}}, *rows[1:]]) + "\n")
    with pytest.raises(InputError, match="lack 1"):
        paired_scores([run], verifier_scores=read_verifier_scores([f]))
    f.write_text(json.dumps(rows[0]) + "\n")
    with pytest.raises(InputError, match="no header"):
        read_verifier_scores([f])


def test_a_band_is_fitted_on_scores_of_the_network_it_will_run_and_refused_for_another(tmp_path):
    """The same network saved in another folder (the shipped verifier rescored from its training
    folder) has another predictor digest and the same fingerprint: accepted; another network's
    scores are refused, naming the way out."""
    import json
    from pathlib import Path

    from verirag_lab.train.cascade import generation_key, train_cascade_from_runs, verifier_fingerprint_and_digest

    run = Path(__file__).resolve().parents[1] / "data/verifier/own_answers/held-out-nli-qwen2.5-1.5b"
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]
    rows = [
        {"key": generation_key(r), "score": r["score"], "seconds": 0.01}
        for r in records
        if r["method"] == "vanilla+verifier" and not r.get("error")
    ]
    fingerprint, digest = verifier_fingerprint_and_digest(None)

    def scores(network: str) -> Path:
        f = tmp_path / f"{len(network)}.jsonl"
        header = {"header": True, "verifier": {"predictor_digest": "another-folder", "model_fingerprint": network}}
        f.write_text("\n".join(json.dumps(x) for x in [header, *rows]) + "\n")
        return f

    assert digest != "another-folder"
    band = train_cascade_from_runs([run], tmp_path / "band.json", verifier_scores=[scores(fingerprint)])
    assert band.fingerprints["verifier"] == fingerprint and (tmp_path / "band.json").is_file()
    with pytest.raises(InputError, match="retrained"):
        train_cascade_from_runs([run], tmp_path / "other.json", verifier_scores=[scores("verifier:0000:other")])


# ---- the default judge of the default model's own answers (issue 47) ----------------------------
def test_the_answer_default_rule_takes_the_best_mean_among_those_level_everywhere():
    from verirag_lab.pick_default import pick_answer_default

    ref = [Measured("verifier", d, a, 0.0) for d, a in (("hotpot", 0.56), ("nq", 0.70), ("followup", 0.72))]
    stack = [
        Measured("stacked", d, a, 0.0, low)
        for d, a, low in (("hotpot", 0.64, 0.01), ("nq", 0.73, -0.01), ("followup", 0.76, -0.01))
    ]
    lone = [
        Measured("logprob_mean", d, a, 0.0, low)
        for d, a, low in (("hotpot", 0.67, 0.01), ("nq", 0.73, -0.04), ("followup", 0.68, -0.14))
    ]
    best, why = pick_answer_default(ref + stack + lone, "verifier")
    assert best == "stacked" and "not level" in why["logprob_mean"] and "nq" in why["logprob_mean"]
    worse = [Measured("stacked", d, a - 0.2, 0.0, 0.0) for d, a in (("hotpot", 0.56), ("nq", 0.70), ("followup", 0.72))]
    assert pick_answer_default(ref + worse, "verifier")[0] == "verifier"  # level, but not above in the mean
    assert "not measured" in pick_answer_default(ref + stack[:2], "verifier")[1]["stacked"]


def test_the_answer_default_rule_with_a_judge_leaves_out_what_costs_over_a_fifth_of_it():
    """With a judge (nli), cost is weighed: a candidate over a fifth of the judge's seconds after an
    answer is not taken, however well it ranks; the standing against the judge is said per set."""
    from verirag_lab.pick_default import pick_answer_default

    sets = ("hotpot", "nq", "followup")
    ref = [Measured("verifier", d, a, 0.0) for d, a in zip(sets, (0.56, 0.70, 0.72))]
    stack = [Measured("stacked", d, a, 0.0, 0.0) for d, a in zip(sets, (0.64, 0.73, 0.76))]
    judged = [
        Measured("judged", d, a, 0.25, 0.02, low) for d, a, low in zip(sets, (0.72, 0.75, 0.78), (-0.02, None, -0.08))
    ]
    best, why = pick_answer_default(ref + stack + judged, "verifier", "nli", judge_seconds=1.6)
    assert best == "judged"
    assert "level with nli on hotpot" in why["judged"] and "not level with nli on followup (-0.080)" in why["judged"]
    assert "nli not measured on nq" in why["judged"]
    # at 0.4 of a generation it costs over a fifth of nli's 1.6: the free stack is taken instead
    dear = [Measured("judged", m.dataset, m.auroc, 0.4, 0.02, m.minus_judge_low) for m in judged]
    best, why = pick_answer_default(ref + stack + dear, "verifier", "nli", judge_seconds=1.6)
    assert best == "stacked" and "over 20% of nli's" in why["judged"]
    with pytest.raises(ValueError, match="measured on no evaluation set"):
        pick_answer_default(ref + stack, "verifier", "nli")


def test_judge_costs_are_the_median_share_of_the_generation_the_distillation_timed():
    from verirag_lab.judge_costs import judge_costs, paired_judge_costs

    def rec(generate, **judges):
        return {"meta": {"seconds": {"generate": generate, **judges}}}

    records = [rec(10, llm_judge=2, judge=3), rec(20, llm_judge=6, judge=4, judge_full=30), rec(10, judge=1), {}]
    costs = judge_costs(records)
    assert costs["llm_judge"] == (0.25, 2) and costs["nli_evidence"] == (0.2, 3) and costs["nli"] == (1.5, 1)
    assert paired_judge_costs(records, ["llm_judge", "nli"]) == {"llm_judge": (0.3, 1), "nli": (1.5, 1)}


def test_a_run_pairs_with_a_judges_scores_kept_beside_it(tmp_path):
    """The sets of 300 keep nli's scores in a file beside the run (`nli_evidence.py score own`): they
    pair by the answer's generation key, an answer the judge failed on is left out, a rescored
    verifier replaces the run's column, and a file that scores none of the run's answers is refused."""
    import json
    from pathlib import Path

    from verirag_lab.train.cascade import generation_key, paired_with_judge_file, read_verifier_scores

    run = Path(__file__).resolve().parents[1] / "data/verifier/own_answers/own-answers-verifier-qwen2.5-1.5b"
    records = [json.loads(line) for line in (run / "results.jsonl").read_text().splitlines() if line.strip()]
    judged = tmp_path / "judge.jsonl"
    lines = [{"id": generation_key(r), "score": i / len(records), "seconds": 2.0} for i, r in enumerate(records)]
    lines[0]["score"] = None  # the judge failed on the first answer
    judged.write_text("\n".join(map(json.dumps, lines)) + "\n")
    p = paired_with_judge_file(run, judged)
    assert len(p) == len(records) - 1 and np.allclose(p.judge_seconds, 2.0)
    assert np.allclose(p.judge, [i / len(records) for i in range(1, len(records))])
    assert np.array_equal(p.labels, [r["faithful"] for r in records[1:]])
    assert p.judge_digest == "file:judge.jsonl"
    rescored = tmp_path / "rescored.jsonl"
    rows = [{"key": generation_key(r), "score": 0.25, "seconds": 0.01} for r in records]
    rescored.write_text("\n".join(map(json.dumps, [{"header": True, "verifier": {"predictor_digest": "x"}}, *rows])))
    q = paired_with_judge_file(run, judged, verifier_scores=read_verifier_scores([rescored]))
    assert np.allclose(q.verifier, 0.25) and q.verifier_digest == "x" and np.allclose(q.judge, p.judge)
    judged.write_text(json.dumps({"id": "another answer", "score": 0.5}) + "\n")
    with pytest.raises(InputError, match="no answer"):
        paired_with_judge_file(run, judged)
