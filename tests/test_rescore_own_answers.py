"""benchmarks/rescore_own_answers.py: a verifier's scores of a committed eval run's answers, no LLM.

The proof that the rebuilt inputs are the run's: verifier v1 (data/verifier/candidates/v1, the one
shipped when the committed `vanilla+verifier` records were made) gives the committed scores again, and the rebuilt
passages give each record's generation key. Skipped without ../shared/data.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from benchmark_module import load_benchmark

REPO = Path(__file__).resolve().parents[1]
OWN = REPO / "data" / "verifier" / "own_answers"
RUN = OWN / "held-out-nli-qwen2.5-1.5b"
PRUNED = OWN / "own-answers-pruned-qwen2.5-1.5b"  # HotpotQA on `ask`'s path: pruned
V1 = REPO / "data" / "verifier" / "candidates" / "v1"  # the verifier that scored the committed runs


def _bench(name: str):
    return load_benchmark(name)


@pytest.fixture(scope="module")
def rescore():
    return _bench("rescore_own_answers")


def test_one_row_per_generated_answer_with_its_committed_verifier_score(rescore):
    records = rescore.read_records(RUN)
    answers = rescore.run_answers(records)
    assert len(answers) == len(records) // 3  # three methods judged each answer
    assert all(a["committed"] is not None for a in answers)
    from verirag.records import ResultStore
    from verirag_lab.train.stack_features import feature_table

    assert sorted(a["key"] for a in answers) == sorted(feature_table(list(ResultStore(RUN).load()), impute=True).keys)


def test_scores_become_a_column_of_the_paired_table(rescore, tmp_path):
    own = _bench("verifier_own_answers")
    answers = rescore.run_answers(rescore.read_records(RUN))
    path = tmp_path / "scores.jsonl"
    rows = [{"header": True, "verifier": {"name": "fake"}}]
    rows += [{"key": a["key"], "score": a["committed"], "seconds": 0.1} for a in answers]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    assert rescore.read_rescored(path)[answers[0]["key"]] == (answers[0]["committed"], 0.1)
    _, columns = own.load([str(RUN)], scores=[f"again={path}"])
    np.testing.assert_allclose(columns["again"], columns["verifier"])
    path.write_text("".join(json.dumps(r) + "\n" for r in rows[:-1]), encoding="utf-8")
    with pytest.raises(SystemExit, match="1 of 150 answers have no score"):
        own.load([str(RUN)], scores=[f"again={path}"])


@pytest.mark.slow
@pytest.mark.shared_data
def test_the_verifier_that_made_the_run_gives_the_committed_scores_again(rescore, shared_data_dir, tmp_path):
    out = tmp_path / "rescored.jsonl"
    res = rescore.rescore(RUN, V1, out, limit=3, progress=False, softmin=0.0)
    assert res["written"] == 6  # 3 HotpotQA and 3 NQ answers
    assert res["generation_equal"] == 6 and res["inputs_differ"] == 0  # the passages the generator read
    assert res["compared"] == 6 and res["max_abs_diff"] < 1e-3  # the question and passages the verifier read
    header = rescore.read_header(out)
    assert header["verifier"]["folder"] == "data/verifier/candidates/v1"
    assert header["verifier"]["fingerprints"]["encoder"]
    text = out.read_text(encoding="utf-8")
    rows = [json.loads(x) for x in text.splitlines()[1:]]
    assert all(set(r) <= {"key", "dataset", "example_id", "group", "score", "seconds", "error"} for r in rows)
    answers = [a for a in rescore.run_answers(rescore.read_records(RUN)) if a["key"] in {r["key"] for r in rows}]
    for ex in rescore.load_examples(rescore.config_for(RUN, None), answers).values():  # no benchmark text
        assert ex.question not in text and not any(p.text[:60] in text for p in ex.passages)
    again = rescore.rescore(RUN, V1, out, limit=3, progress=False)
    assert again["written"] == 0 and again["skipped"] == 6


@pytest.mark.slow
@pytest.mark.shared_data
def test_a_follow_up_is_rescored_in_its_conversation(rescore, shared_data_dir, tmp_path):
    """The conversational run's answers were judged with each question's history; the verifier that
    made that run (`warm`, shipped then) gives its committed scores again only when rescoring reads it so."""
    run = OWN / "own-answers-followup-verifier-qwen2.5-1.5b"
    warm = REPO / "data" / "verifier" / "candidates" / "warm"
    res = rescore.rescore(run, warm, tmp_path / "rescored.jsonl", limit=3, progress=False, softmin=0.0)
    assert res["written"] == 6 and res["inputs_differ"] == 0
    assert res["compared"] == 6 and res["max_abs_diff"] < 1e-3


@pytest.mark.slow
@pytest.mark.shared_data
def test_a_pruned_run_is_rescored_on_the_sentences_its_judges_read(rescore, shared_data_dir, tmp_path):
    """`ask`'s path prunes: the records keep each passage's kept sentences (no text), and the passages
    rebuilt from them give the generation keys and the committed scores of the verifier that made
    the run (`warm`) again."""
    warm = REPO / "data" / "verifier" / "candidates" / "warm"
    res = rescore.rescore(PRUNED, warm, tmp_path / "rescored.jsonl", limit=4, progress=False, softmin=0.0)
    assert res["written"] == 4 and res["generation_equal"] == 4 and res["inputs_differ"] == 0
    assert res["compared"] == 4 and res["max_abs_diff"] < 1e-6
    answers = rescore.run_answers(rescore.read_records(PRUNED))
    example = rescore.load_examples(rescore.config_for(PRUNED, None), answers[:1], whole=True)
    whole, report = next(iter(example.values())), answers[0]["prune"]
    cut = rescore.pruned_as_recorded(whole, report)
    assert [p.id for p in cut.passages] == [p["id"] for p in report["passages"] if p["kept"]]
    assert sum(len(p.text) for p in cut.passages) < sum(len(p.text) for p in whole.passages)
    wrong = {**report, "passages": [{**report["passages"][0], "n_sentences": 999}, *report["passages"][1:]]}
    with pytest.raises(SystemExit, match="splits into"):
        rescore.pruned_as_recorded(whole, wrong)


def test_a_judge_that_did_not_score_every_answer_is_an_error_not_a_mean(tmp_path):
    """A live run stopped part way holds answers without nli's score: reading it must say so, not
    fill the score in with nli's mean (which would move its AUROC)."""
    own = _bench("verifier_own_answers")
    lines = (RUN / "results.jsonl").read_text(encoding="utf-8").splitlines()
    dropped = next(i for i, line in enumerate(lines) if json.loads(line)["method"] == "vanilla+nli")
    (tmp_path / "results.jsonl").write_text("\n".join(lines[:dropped] + lines[dropped + 1 :]) + "\n", encoding="utf-8")
    with pytest.raises(SystemExit, match=r"answers without a score of nli \(1\)"):
        own.load([str(tmp_path)])
    _, columns = own.load([str(tmp_path)], methods=["vanilla+verifier", "vanilla+self_check"])
    assert len(columns["verifier"]) == 150


def test_a_stack_becomes_a_column_computed_from_the_answers_own_columns(tmp_path):
    from verirag.learned.stack import StackedVerifier

    own = _bench("verifier_own_answers")
    table, columns = own.load([str(RUN)], methods=["vanilla+verifier"])
    features = ["verifier", "logprob_mean"]
    X = np.column_stack([columns[f] for f in features])
    sources = {"verifier": dict(table.sources["verifier"])}
    StackedVerifier(features, sources=sources).fit(X, table.y).save(tmp_path / "stack.json")
    name, column = own.stacked_column(f"stacked={tmp_path / 'stack.json'}", table, columns)
    fitted = StackedVerifier.load(tmp_path / "stack.json")
    assert name == "stacked" and np.allclose(column, fitted.predict_proba(X)) and len(column) == len(table.y)
    sources["verifier"]["digest"] = "0" * 12  # a stack made with another verifier
    StackedVerifier(features, sources=sources).fit(X, table.y).save(tmp_path / "other.json")
    with pytest.raises(SystemExit, match="another model"):
        own.stacked_column(f"other={tmp_path / 'other.json'}", table, columns)
    # ... measured with that verifier's rescored scores, a column whose header names its digest
    columns["again"] = columns["verifier"][::-1].copy()
    _, other = own.stacked_column(f"other={tmp_path / 'other.json'}", table, columns, {"again": "0" * 12})
    X_again = np.column_stack([columns["again"], columns["logprob_mean"]])
    assert np.allclose(other, StackedVerifier.load(tmp_path / "other.json").predict_proba(X_again))
    del columns["again"]
    with pytest.raises(SystemExit, match="no column self_check"):
        StackedVerifier(["self_check"]).fit(X[:, :1], table.y).save(tmp_path / "sc.json")
        own.stacked_column(f"sc={tmp_path / 'sc.json'}", table, {"verifier": columns["verifier"]})


def test_listed_question_groups_are_reported_apart_from_the_others(tmp_path):
    """--split-groups: the answers of the listed questions and the rest, each answer in exactly one."""
    own = _bench("verifier_own_answers")
    table, _ = own.load([str(RUN)], methods=["vanilla+verifier"])
    listed = sorted(set(table.groups))[:3]
    path = tmp_path / "groups.txt"
    path.write_text("# a comment\n" + "\n".join(listed) + "\n", encoding="utf-8")
    (name_in, inside), (name_out, outside) = own.listed_parts(table, path)
    assert name_in == "listed in groups.txt" and name_out == "not listed in groups.txt"
    assert {table.groups[i] for i in inside} == set(listed)
    assert not {table.groups[i] for i in outside} & set(listed)
    assert len(inside) + len(outside) == len(table.groups)


def test_the_answer_default_rule_on_the_committed_own_answer_sets_picks_the_shipped_stack(capsys):
    """The decision that made the stack the default model's judge (verirag.awf.defaults), from the
    committed runs: it holds while the committed answers, verifier and stack are those it was made on."""
    pick = _bench("pick_answer_default")
    runs = [
        str(OWN / n)
        for n in (
            "own-answers-verifier-qwen2.5-1.5b",
            "own-answers-nq-verifier-qwen2.5-1.5b",
            "own-answers-followup-verifier-qwen2.5-1.5b",
        )
    ]
    stack = REPO / "src" / "verirag" / "learned" / "shipped" / "stack.json"
    no_judge = REPO / "data" / "verifier" / "candidates" / "stack-no-judge" / "stack.json"
    args = [*runs, "--run-scores", "llm_judge=llm-judge.jsonl", "--run-scores", "nli=nli-passages.jsonl"]
    args += ["--run-scores", "shipped=verifier-shipped.jsonl"]  # the runs' own column is the verifier before
    args += ["--stack", f"stacked={stack}", "--stack", f"no_judge={no_judge}"]
    args += ["--candidates", "stacked,no_judge,logprob_mean", "--resamples", "300", "--judge", "nli"]
    args += ["--costs", str(REPO / "data" / "verifier" / "labels" / "distill-qwen2.5-1.5b.jsonl.gz")]
    assert pick.main(args) == 0
    out = capsys.readouterr().out
    assert "the rule picks: stacked" in out and "logprob_mean: not level" in out


def test_the_rule_reads_a_stack_fitted_on_another_verifier_with_that_verifiers_scores(capsys):
    """The shipped stack names the shipped verifier, while the committed runs' own column is the verifier
    shipped before (`warm`): it is measured with the shipped verifier's committed scores of each set,
    found by the digest the stack names; without them it is refused, not measured on the run's column.
    Fitted on the candidate `distill3-gold-vs` and pointed at the shipped folder when it shipped
    (verirag_lab.train.stack_repoint), it gives the candidate's numbers again."""
    pick = _bench("pick_answer_default")
    runs = [str(OWN / "own-answers-verifier-qwen2.5-1.5b"), str(OWN / "own-answers-followup-verifier-qwen2.5-1.5b")]
    stack = REPO / "src" / "verirag" / "learned" / "shipped" / "stack.json"
    args = [*runs, "--run-scores", "llm_judge=llm-judge.jsonl", "--stack", f"stacked={stack}"]
    args += ["--candidates", "stacked", "--resamples", "200"]
    with pytest.raises(SystemExit, match="another model"):
        pick.main(args)
    assert pick.main([*args, "--run-scores", "shipped=verifier-shipped.jsonl"]) == 0
    out = capsys.readouterr().out
    rows = [line.split() for line in out.splitlines() if " stacked " in f" {line} "]
    assert [r[2] for r in rows[:2]] == ["0.680", "0.812"]  # as the candidate measured (candidates/distill README)


def test_the_verdict_at_a_threshold_agrees_with_scikit_learn():
    """--verdict-at: share called supported, precision and recall, as sklearn counts them."""
    from sklearn.metrics import precision_score, recall_score

    own = _bench("verifier_own_answers")
    rng = np.random.default_rng(0)
    y = (rng.random(200) < 0.4).astype(float)
    score = np.clip(0.3 * y + rng.random(200) * 0.7, 0, 1)
    called, precision, recall = own.verdict_row(y, score, 0.5)
    assert called == pytest.approx(float((score >= 0.5).mean()))
    assert precision == pytest.approx(precision_score(y, score >= 0.5))
    assert recall == pytest.approx(recall_score(y, score >= 0.5))
    _, nothing, _ = own.verdict_row(y, score, 2.0)  # nothing called supported: no precision, not 0
    assert np.isnan(nothing)


def test_a_partial_column_reports_only_the_answers_it_scored(tmp_path, capsys):
    """A judge still scoring a set (nli over every passage, hours of LLM time) is compared on the
    answers it has scored when named with --partial; without it the missing scores are an error."""
    own = _bench("verifier_own_answers")
    rows = [json.loads(line) for line in (RUN / "nli-evidence.jsonl").read_text(encoding="utf-8").splitlines()]
    part = tmp_path / "part.jsonl"
    part.write_text("".join(json.dumps(r) + "\n" for r in rows[:40]), encoding="utf-8")
    args = [str(RUN), "--methods", "vanilla+verifier", "--baseline", "verifier", "--verifier-scores", f"some={part}"]
    with pytest.raises(SystemExit, match="110 of 150 answers have no score"):
        own.main(args)
    assert own.main([*args, "--partial", "some", "--resamples", "50"]) == 0
    out = capsys.readouterr().out
    assert "40 of 150 answers, those some scored" in out
    assert "\nall: 40 answers" in out


def test_the_answer_default_rule_weighs_the_judges_cost_from_the_distillations_timing(capsys):
    """--judge nli --costs LABELS: each candidate's cost is the distillation's timing of the judges it
    reads, each is compared with nli on the answers nli scored, and llm_judge, the all-passages
    judge, is taken only within a fifth of nli's seconds after an answer."""
    pick = _bench("pick_answer_default")
    labels = REPO / "data" / "verifier" / "labels" / "distill-qwen2.5-1.5b.jsonl.gz"
    args = [str(RUN), "--verifier-scores", f"llm_judge={RUN / 'llm-judge.jsonl'}", "--candidates", "llm_judge"]
    assert pick.main([*args, "--judge", "nli", "--costs", str(labels), "--resamples", "200"]) == 0
    out = capsys.readouterr().out
    rows = {line.split()[1]: line.split() for line in out.splitlines() if line.startswith(RUN.name)}
    judge_cost, nli_cost = float(rows["llm_judge"][-1]), float(rows["nli"][-1])
    assert 0 < judge_cost < 1 < nli_cost  # shares of a generation, as the distillation timed them
    assert judge_cost < nli_cost / 5  # one prompt after the answer against one per passage
    assert -1 < float(rows["llm_judge"][-2]) < 0.3  # its paired lower bound against nli, printed
    assert "the rule picks: " in out and "llm_judge: " in out
    with pytest.raises(SystemExit, match="--costs"):
        pick.main([*args, "--judge", "nli"])


def test_the_shipped_folder_is_named_as_the_default_verifier(rescore):
    """Scores of the shipped verifier's folder carry the default predictor's digest, which a stack fitted
    on the default verifier checks (`verifier_own_answers.py --stack`); another folder keeps its own."""
    from verirag.awf.predictors.verifier import TrainedVerifierPredictor
    from verirag.learned.shipped import shipped_verifier_dir

    assert rescore.Scorer(shipped_verifier_dir()).identity["predictor_digest"] == TrainedVerifierPredictor().digest
    assert rescore.Scorer(V1).identity["predictor_digest"] != TrainedVerifierPredictor().digest


def test_the_shipped_stack_reads_the_default_verifiers_committed_scores_of_the_held_out_nli_run():
    own = _bench("verifier_own_answers")
    scores = [f"shipped={RUN / 'verifier-shipped.jsonl'}", f"llm_judge={RUN / 'llm-judge.jsonl'}"]
    table, columns = own.load([str(RUN)], scores=scores)
    stack = REPO / "src" / "verirag" / "learned" / "shipped" / "stack.json"
    name, column = own.stacked_column(f"stacked={stack}", table, columns, own.rescored_digests(scores))
    assert name == "stacked" and column.shape == (150,) and 0 < column.min() < column.max() < 1


def test_one_name_over_two_sets_whose_keys_collide_is_refused(tmp_path):
    """The own-answer sets share generation keys (a follow-up's is its direct question's): two files
    under one --verifier-scores name that score a key differently are refused, never merged."""
    own = _bench("verifier_own_answers")
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    a.write_text('{"id": "k1", "score": 0.2, "seconds": 1.0}\n{"id": "k2", "score": 0.4, "seconds": 1.0}\n')
    b.write_text('{"id": "k2", "score": 0.9, "seconds": 1.0}\n')
    with pytest.raises(SystemExit, match="otherwise than an earlier file"):
        own.rescored_columns([f"x={a}", f"x={b}"])
    b.write_text('{"id": "k3", "score": 0.9, "seconds": 1.0}\n')
    assert set(own.rescored_columns([f"x={a}", f"x={b}"])["x"]) == {"k1", "k2", "k3"}


def test_an_exported_pruned_run_keeps_what_the_pruner_did_and_none_of_the_passages_text(tmp_path):
    own = _bench("verifier_own_answers")
    passage = {"id": "p", "title": "T", "sentences": ["One.", "Two."], "kept": [1], "scores": [0.1, 0.9]}
    record = {"question": "q", "details": {"prune": {"threshold": 0.14, "passages": [passage]}, "best": 0}}
    cleaned = own._without_text(record)
    assert cleaned["details"]["prune"]["passages"] == [{"id": "p", "kept": [1], "scores": [0.1, 0.9], "n_sentences": 2}]
    assert cleaned["details"]["best"] == 0 and record["details"]["prune"]["passages"][0]["sentences"]  # not in place
    for line in (PRUNED / "results.jsonl").read_text(encoding="utf-8").splitlines():
        r = json.loads(line)
        assert r["question"] == "" and r["references"] == []
        assert all({"sentences", "title"}.isdisjoint(p) for p in r["details"]["prune"]["passages"])


def test_the_pruned_runs_default_judge_is_the_stack_of_the_day_over_its_columns():
    """The run recorded `ask`'s default judge then (the stack shipped until 2026-12-01, kept in
    data/verifier/candidates/stack-llmj) beside its parts: that stack computed offline from those parts
    gives the recorded scores again, so the two measure the same thing."""
    own = _bench("verifier_own_answers")
    table, columns = own.load([str(PRUNED)])
    stack = REPO / "data" / "verifier" / "candidates" / "stack-llmj" / "stack.json"
    _, offline = own.stacked_column(f"offline={stack}", table, columns)
    assert len(offline) == len(columns["stacked"]) == 300
    assert np.allclose(offline, columns["stacked"], atol=1e-6)


def _sets_the_shipped_stack_is_level_with_nli_on(runs: list[Path], capsys, run_scores=(), candidates="default"):
    """Run the answer-default rule with the shipped stack as `default` (every run's own
    verifier-shipped.jsonl replays it) and return the sets its line says it is level with nli on,
    after checking that the rule picks it."""
    pick = _bench("pick_answer_default")
    stack = REPO / "src" / "verirag" / "learned" / "shipped" / "stack.json"
    args = [*map(str, runs), *[a for s in run_scores for a in ("--run-scores", s)]]
    args += ["--run-scores", "shipped=verifier-shipped.jsonl"]  # a run's own column may be the verifier before
    args += ["--stack", f"default={stack}", "--candidates", candidates, "--resamples", "300"]
    args += ["--judge", "nli", "--costs", str(REPO / "data" / "verifier" / "labels" / "distill-qwen2.5-1.5b.jsonl.gz")]
    assert pick.main(args) == 0
    out = capsys.readouterr().out
    assert "the rule picks: default" in out
    default_line = next(line for line in out.splitlines() if line.strip().startswith("default: qualifies"))
    return default_line.split("level with nli on", 1)[1]


def test_the_answer_default_rule_picks_the_shipped_stack_with_the_hotpotqa_set_on_asks_path(capsys):
    """The same rule with the HotpotQA answers made as `ask` makes them since pruning went on: the
    shipped stack is picked again, and is level with nli on that set."""
    runs = [PRUNED, OWN / "own-answers-nq-verifier-qwen2.5-1.5b", OWN / "own-answers-followup-verifier-qwen2.5-1.5b"]
    level = _sets_the_shipped_stack_is_level_with_nli_on(
        runs,
        capsys,
        run_scores=("llm_judge=llm-judge.jsonl", "nli=nli-passages.jsonl"),
        candidates="default,logprob_mean",
    )
    assert PRUNED.name in level


ASKS_PATH = [PRUNED, OWN / "own-answers-nq-pruned-qwen2.5-1.5b", OWN / "own-answers-followup-pruned-qwen2.5-1.5b"]


def test_the_answer_default_rule_picks_the_shipped_stack_on_the_three_sets_on_asks_path(capsys):
    """Every own-answer set made as `ask` answers since pruning went on (HotpotQA 300, NQ 300, the
    conversational 344): the rule picks the shipped stack, level with nli over what was read on all three."""
    level = _sets_the_shipped_stack_is_level_with_nli_on(ASKS_PATH, capsys)
    assert all(run.name in level for run in ASKS_PATH)


def test_a_given_stack_column_reads_the_answers_without_their_logprobs(tmp_path):
    """`--stack-given`: the stack as `stacked(impute=true)` judges the same answers given to verify,
    each log-probability feature at its training mean (z = 0), the other features as `--stack`."""
    from verirag.learned.stack import StackedVerifier

    own = _bench("verifier_own_answers")
    table, columns = own.load([str(RUN)], methods=["vanilla+verifier"])
    features = ["verifier", "logprob_mean"]
    X = np.column_stack([columns[f] for f in features])
    sources = {"verifier": dict(table.sources["verifier"])}
    fitted = StackedVerifier(features, sources=sources).fit(X, table.y)
    fitted.save(tmp_path / "stack.json")
    _, with_logprobs = own.stacked_column(f"s={tmp_path / 'stack.json'}", table, columns)
    _, given = own.stacked_column(f"s={tmp_path / 'stack.json'}", table, columns, given=True)
    z = (columns["verifier"] - fitted.mean_[0]) / fitted.scale_[0]
    assert np.allclose(given, 1 / (1 + np.exp(-(z * fitted.coef_[0] + fitted.intercept_))))
    assert not np.allclose(given, with_logprobs)
