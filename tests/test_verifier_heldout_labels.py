"""benchmarks/verifier_heldout_labels.py: the variant a table row is named by, from a record id."""

from __future__ import annotations

from benchmark_module import load_benchmark


def test_the_variant_of_a_record_id():
    kind_of = load_benchmark("verifier_heldout_labels").kind_of
    assert kind_of("paraphrase/nq/51/qwen2.5-1.5b.paraphrase-swapped/s0") == "paraphrase-swapped"
    assert kind_of("real/nq/1284/qwen2.5-1.5b.gold.long.t0/s0") == "gold"
    assert kind_of("multihop/hotpotqa/5a8d/both_mixed/s0") == "both_mixed"
    assert kind_of("doc_claims/docs/manpages-dev:usr/share/man/man2/fork.2.gz#5/sentence/s0") == "sentence"
    assert kind_of("odd") == "?"
