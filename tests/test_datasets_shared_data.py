"""The loaders on the real benchmark files in ../shared/data (skipped where they are absent).

Counts printed here (run with -s) are the ones the benchmarks rely on.
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from verirag_lab.datasets import load_dataset

pytestmark = pytest.mark.shared_data


@pytest.fixture(scope="module")
def nq_all(shared_data: Path):
    return load_dataset("nq", shared_data / "lost_in_the_middle_nq" / "nq-open-oracle.jsonl.gz")


def test_nq_bm25_top5(nq_all) -> None:
    assert len(nq_all) == 2655 and all(len(e.passages) == 5 for e in nq_all)
    answerable = sum(e.answerable for e in nq_all) / len(nq_all)
    gold = sum(e.meta["gold_retrieved"] for e in nq_all) / len(nq_all)
    print(
        f"\nnq: {len(nq_all)} questions, pool {nq_all[0].meta['pool_size']} passages, k=5 BM25: "
        f"{answerable:.1%} answerable, gold passage retrieved for {gold:.1%}"
    )
    assert 0.5 < answerable < 0.99  # a mix, not all or nothing
    assert all(e.answerable == any(e.relevance) for e in nq_all)
    assert len({e.id for e in nq_all}) == len(nq_all)


def test_nq_sampling_is_deterministic(shared_data: Path, nq_all) -> None:
    a = load_dataset("nq", shared_data / "lost_in_the_middle_nq", n=40, seed=5)
    b = load_dataset("nq", shared_data / "lost_in_the_middle_nq", n=40, seed=5)
    assert len(a) == 40 and a == b
    by_id = {e.id: e for e in nq_all}
    assert all(e == by_id[e.id] for e in a)


def test_hotpotqa_twins(shared_data: Path) -> None:
    examples = load_dataset("hotpotqa", shared_data / "hotpotqa_amor_subset")
    groups = Counter(e.group for e in examples)
    assert len(examples) == 2 * len(groups) and set(groups.values()) == {2}
    for una, ans in zip(examples[::2], examples[1::2]):
        assert una.group == ans.group and (una.answerable, ans.answerable) == (False, True)
        assert len(una.passages) == len(ans.passages) and sum(ans.relevance) == 1
    leaky = sum(e.meta["answer_in_distractors"] for e in examples[::2]) / len(groups)
    print(
        f"\nhotpotqa: {len(groups)} of 600 questions usable -> {len(examples)} examples; "
        f"passages per example {dict(Counter(len(e.passages) for e in examples))}; "
        f"answer string in some distractor for {leaky:.1%}"
    )
    assert len(groups) > 500
    picked = load_dataset("hotpotqa", shared_data / "hotpotqa_amor_subset", n=25, seed=1)
    assert len(picked) == 50 and len({e.group for e in picked}) == 25
    assert picked == load_dataset("hotpotqa", shared_data / "hotpotqa_amor_subset", n=25, seed=1)


def test_hotpotqa_original_distractor_setting(shared_data: Path) -> None:
    dev = load_dataset("hotpotqa_original", shared_data / "hotpotqa_amor_subset" / "dev.json", mode="distractor")
    assert len(dev) == 100 and all(e.answerable and sum(e.relevance) == 2 for e in dev)


def test_nomiracl(shared_data_dir: Path) -> None:
    shared_data = shared_data_dir
    examples = load_dataset("nomiracl", shared_data / "nomiracl_en")
    assert Counter(e.answerable for e in examples) == {True: 250, False: 250}
    assert all(len(e.passages) == 10 for e in examples)
    assert all(p.title and p.text and "\n\n[" not in p.text for e in examples for p in e.passages)
    assert all(e.question and not e.question.startswith("QUESTION") for e in examples)
    # by name, the default path in $VERIRAG_DATA_DIR is the same folder
    assert load_dataset("nomiracl", n=20, seed=3) == load_dataset("nomiracl", shared_data / "nomiracl_en", n=20, seed=3)


def test_instruct_qa_human_topiocqa_nq_open(shared_data: Path) -> None:
    folder = shared_data / "instruct_qa_human"
    rows396 = load_dataset("instruct_qa_human", folder)
    rows1200 = load_dataset("instruct_qa_human", folder, file="1200")
    assert len(rows396) == 396 and len(rows1200) == 1200
    assert len({e.id for e in rows1200}) == 1200 and all(e.passages and e.references for e in rows1200)
    print(f"\ninstruct_qa_human 396 labels: {dict(Counter(e.meta['human_correctness'] for e in rows396))}")
    topio = load_dataset("topiocqa", shared_data / "topiocqa" / "topiocqa_dev.early-2021-11.json")
    assert len(topio) == 2514 and sum(e.answerable is False for e in topio) == 174
    assert load_dataset("nq_open", shared_data / "nq_open" / "NQ-open.dev.jsonl", n=5)[0].references


@pytest.mark.slow
def test_nomiracl_references_with_smollm(shared_data: Path, smollm) -> None:
    # Contract, not quality: two relevant queries, cut to their first passage so that the
    # prompts stay short on a CPU (the loader itself sends all ten).
    from verirag_lab.datasets.nomiracl import add_references

    examples = load_dataset("nomiracl", shared_data / "nomiracl_en", subset="relevant", n=2)
    for e in examples:
        e.passages = e.passages[:1]
    add_references(examples, smollm)
    for e in examples:
        assert isinstance(e.meta["reference_raw"], str) and e.meta["reference_model"] == "smollm2-135m"
        assert len(e.references) <= 1 and all(r.strip() and "\n" not in r for r in e.references)
        print(f"\n{e.question!r} -> {e.references} (raw {e.meta['reference_raw']!r:.80})")
