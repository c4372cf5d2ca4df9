"""The whole dev set's committed scores (data/verifier/dev_scores/whole/: every answer as `verirag
verify` judged it on 2026-11-30, the history read, the answer rules applied): the scores there of the
verifier shipped then (`warm`, data/verifier/candidates/warm), with the number rule given back (`number_rule.before_rules`), are the scores committed
before the rule existed, so the rule's table (benchmarks/cascade.py) reads nli's whole-set scores on
the same footing as every other set's. Reads instruct_qa_human (skipped without ../shared/data)."""

from __future__ import annotations

from pathlib import Path

from benchmark_module import load_benchmark

REPO = Path(__file__).resolve().parents[1]
SCORES = REPO / "data" / "verifier" / "dev_scores"


def test_the_number_rule_given_back_gives_the_scores_made_before_it(shared_data_dir):
    dev, rule = load_benchmark("verifier_dev"), load_benchmark("number_rule")
    rows = dev.dev_rows(shared_data_dir)
    today = dev.read_scores(SCORES / "whole" / "verifier-warm.jsonl")
    before = dev.read_scores(SCORES / "verifier-warm.jsonl")
    given_back = rule.before_rules(today, rows)
    ruled = [r["id"] for r in rows if today.get(r["id"]) is not None and given_back[r["id"]] != today[r["id"]]]
    assert len(ruled) == 30  # the answers the number rule lowered, as the run's warnings say
    common = [k for k, v in before.items() if v is not None and today.get(k) is not None]
    assert len(common) == 799
    assert max(abs(given_back[k] - before[k]) for k in common) < 1e-5


def test_every_dev_answer_has_nli_and_its_seconds():
    dev = load_benchmark("verifier_dev")
    nli = dev.read_scores(SCORES / "whole" / "nli-qwen2.5-1.5b.jsonl")
    seconds = dev.read_seconds(SCORES / "whole" / "nli-qwen2.5-1.5b.jsonl")
    assert len(nli) == 800 and sum(v is None for v in nli.values()) == 1  # the log's one empty answer
    assert set(seconds) == {k for k, v in nli.items() if v is not None}
    assert all(0 < s < 60 for s in seconds.values())


def test_the_verify_rule_reads_every_dev_answer_and_the_own_sets_of_300(shared_data_dir, tmp_path, capsys):
    """benchmarks/cascade.py over the committed scores: the dev rows are every answer, the own-answer
    sets of the rule are the sets of 300 where nli scored them, and the rule's pick is the one
    docs/results/cascade.md gives (nli: the verifier is not level on own multi-hop answers)."""
    import json

    cascade = load_benchmark("cascade")
    out = tmp_path / "cascade.json"
    assert cascade.main(["--resamples", "200", "--json", str(out)]) == 0
    d = json.loads(out.read_text())
    n = {r["set"]: r["n"] for r in d["rows"] if r["judge"] == "nli"}
    assert n["dev:hotpot_qa"] == 400 and n["dev:topiocqa"] == 399 and n["own300:hotpotqa"] == n["own300:nq"] == 300
    assert n["own300:followup"] == 344
    assert "own300:hotpotqa" in d["why"]["vanilla+verifier"] and d["default"] == "vanilla+nli"
    assert "own:hotpotqa" not in d["why"]["vanilla+verifier"]  # the 150 held-out answers only where no set of 300


def test_a_verifier_measured_today_is_read_before_the_rules_as_nli_is(shared_data_dir):
    """cascade.py --verifier NAME: a candidate measured today (`scripts/measure_verifier.sh`: its dev
    scores only in whole/, made since the answer rules) is read with the rules given back, as nli's
    are; the verifier shipped before (`warm`) read that way gives its scores made before the rules."""
    dev, cascade, rule = load_benchmark("verifier_dev"), load_benchmark("cascade"), load_benchmark("number_rule")
    rows = dev.dev_rows(shared_data_dir)
    assert not (SCORES / "verifier-distill-gold.jsonl").exists()  # only its whole-set run is committed
    today = dev.read_scores(SCORES / "whole" / "verifier-distill-gold.jsonl")
    read = cascade.dev_verifier_scores("distill-gold", rows)
    assert read == rule.before_rules(today, rows)
    assert sum(v is not None and abs(read[k] - v) > 1e-9 for k, v in today.items()) > 0  # the ruled answers
    shipped = cascade.dev_verifier_scores("warm", rows)
    before = dev.read_scores(SCORES / "verifier-warm.jsonl")
    common = [k for k, v in before.items() if v is not None and shipped.get(k) is not None]
    assert len(common) == 799 and max(abs(shipped[k] - before[k]) for k in common) < 1e-5
