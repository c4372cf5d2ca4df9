"""benchmarks/heldout_docs.py: the sample it draws, the score files it writes and the table it
prints, on small fake claims (no LLM, no benchmark data, no documentation corpus)."""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from benchmark_module import load_benchmark

hd = load_benchmark("heldout_docs")


@dataclass
class Claim:
    source: str
    label: int
    group: str
    question: str = "What does the manpages documentation say in man7/x.7?"
    answer: str = "A claim."
    passages: tuple[str, ...] = ("man7/x.7\nA paragraph.",)


def fake_claims(pages: int = 6, paragraphs: int = 5) -> list[Claim]:
    """Every kind on every paragraph, as the recipe makes them (each paragraph yields several)."""
    out = []
    for p in range(pages):
        for n in range(paragraphs):
            para = f"manpages:usr/share/man/man7/page{p}.7.gz#{n}"
            for kind in (*hd.SUPPORTED_KINDS, *hd.UNSUPPORTED_KINDS):
                label = int(kind in hd.SUPPORTED_KINDS)
                out.append(Claim(f"doc_claims/docs/{para}/{kind}/s0", label, f"docs:{para.split('#')[0]}"))
    return out


def test_the_record_id_names_the_kind_and_the_paragraph():
    rid = "doc_claims/docs/manpages:usr/share/man/man7/uri.7.gz#19/party/s0"
    assert hd.edit_kind(rid) == "party"
    assert hd.paragraph_of(rid) == "manpages:usr/share/man/man7/uri.7.gz#19"


def test_the_sample_is_balanced_one_per_paragraph_and_spread_over_the_kinds():
    chosen = hd.sample_claims(fake_claims(), 20, seed=3)
    assert len(chosen) == 20
    assert sum(c.label for c in chosen) == 10
    paragraphs = [hd.paragraph_of(c.source) for c in chosen]
    assert len(set(paragraphs)) == len(paragraphs)
    kinds = Counter(hd.edit_kind(c.source) for c in chosen)
    assert kinds["sentence"] == kinds["cloze"] == 5
    assert all(kinds[k] == 2 for k in hd.UNSUPPORTED_KINDS)
    # seeded: the same claims again, another seed another draw
    assert [c.source for c in hd.sample_claims(fake_claims(), 20, seed=3)] == [c.source for c in chosen]
    assert {c.source for c in hd.sample_claims(fake_claims(), 20, seed=4)} != {c.source for c in chosen}


def test_the_sample_refuses_more_claims_than_free_paragraphs():
    with pytest.raises(ValueError, match="distinct paragraphs"):
        hd.sample_claims(fake_claims(pages=1, paragraphs=3), 10)


def test_a_log_row_has_what_verify_reads():
    c = fake_claims()[0]
    row = hd.log_row(c, "the sentence")
    assert row["id"] == c.source and row["group"] == c.group and row["kind"] == "sentence"
    assert row["user_input"] == c.question and row["response"] == c.answer
    assert row["retrieved_contexts"] == list(c.passages) and row["label"] == 1 and row["reference"] == "the sentence"
    assert "reference" not in hd.log_row(c, None)


def test_the_reference_is_the_sentence_or_the_true_fill():
    base = {"passage_span": ["docs", "manpages:p.7.gz#1", 10, 50]}
    edited = {"id": "doc_claims/docs/manpages:p.7.gz#1/condition/s0", "answer": {"edit": {"edit": base}}}
    assert hd.reference_spec(edited) == base
    swapped = {
        "id": "doc_claims/docs/manpages:p.7.gz#1/cloze_swapped/s0",
        "answer": {"passage_span": ["docs", "manpages:p.7.gz#4", 0, 3]},
        "question": {"join": ["Fill in the blank: ", {"edit": base, "offset": 5, "length": 4, "replacement": "____"}]},
    }
    assert hd.reference_spec(swapped) == {"passage_span": ["docs", "manpages:p.7.gz#1", 15, 4]}


def write_results(folder: Path, lines: list[dict]) -> Path:
    folder.mkdir(parents=True)
    with open(folder / "results.jsonl", "w") as fh:
        for d in lines:
            fh.write(json.dumps(d) + "\n")
    return folder


def test_export_keeps_ids_labels_scores_and_timings_and_no_text(tmp_path):
    text = "The child does not inherit record locks from its parent."
    run = write_results(
        tmp_path / "run",
        [
            {"id": "a", "question": "Q?", "answer": text, "score": 0.9, "seconds": 1.5, "error": None,
             "supporting_passage": {"text": text}, "sentences": [{"text": text, "score": 0.9}]},
            {"id": "b", "question": "Q?", "answer": text, "score": None, "seconds": 2.0, "error": "timeout"},
        ],
    )  # fmt: skip
    out = tmp_path / "scores.jsonl"
    assert hd.export(run, out, {"a": 1, "b": 0}) == {"scores": 2, "failed": 1}
    written = out.read_text()
    assert "child" not in written and "Q?" not in written
    lines = [json.loads(x) for x in written.splitlines()]
    assert all(set(d) == set(hd.EXPORTED_FIELDS) for d in lines)
    assert lines[0] == {"id": "a", "label": 1, "score": 0.9, "seconds": 1.5, "error": None}
    assert hd.read_scores(out)["b"].error == "timeout"


def synthetic_scores(tmp_path: Path, n: int = 60) -> dict[str, Path]:
    rng = np.random.default_rng(0)
    y = np.arange(n) % 2
    kind = ["sentence" if y[i] else ("negation", "party")[i // 2 % 2] for i in range(n)]
    ids = [f"doc_claims/docs/manpages:usr/share/man/man7/p{i // 3}.7.gz#{i}/{kind[i]}/s0" for i in range(n)]
    paths = {}
    for name, signal, sec in (("verifier", 0.8, 0.1), ("nli", 1.5, 8.0), ("llm_judge", 0.2, 12.0)):
        scores = 1 / (1 + np.exp(-(signal * (2 * y - 1) + rng.normal(size=n))))
        paths[name] = tmp_path / f"{name}.jsonl"
        with open(paths[name], "w") as fh:
            for i in range(n):
                fh.write(
                    json.dumps({"id": ids[i], "label": int(y[i]), "score": float(scores[i]), "seconds": sec}) + "\n"
                )
    return paths


def test_compare_gives_every_judge_an_interval_the_paired_difference_and_the_cascade(tmp_path):
    paths = synthetic_scores(tmp_path)
    runs = {k: hd.read_scores(v) for k, v in paths.items()}
    rows, counts = hd.compare(runs, None, resamples=200)
    by = {r["judge"]: r for r in rows}
    assert set(by) == {"verifier", "nli", "llm_judge", "cascade"}
    assert counts["claims"] == 60 and counts["supported"] == 30 and counts["man_pages"] == 20
    assert by["nli"]["minus_nli"] is None
    for r in rows:
        assert r["low"] <= r["auroc"] <= r["high"]
    d = by["verifier"]["minus_nli"]
    assert d[0] == pytest.approx(by["verifier"]["auroc"] - by["nli"]["auroc"]) and d[1] <= d[0] <= d[2]
    assert by["nli"]["mean_s"] == pytest.approx(8.0) and by["verifier"]["median_s"] == pytest.approx(0.1)
    share = by["cascade"]["to_llm"]
    assert 0 <= share <= 1 and by["cascade"]["mean_s"] == pytest.approx(0.1 + 8.0 * share)
    assert "| cascade |" in hd.markdown(rows)
    assert set(counts["by_kind"]["nli"]) == {"negation", "party"}


def test_compare_takes_names_and_leaves_out_unscored_claims_and_adds_the_text_metrics(tmp_path):
    paths = synthetic_scores(tmp_path, n=20)
    runs = hd.named_runs([f"mine={paths['verifier']}", str(paths["nli"])])
    assert list(runs) == ["mine", "nli"]
    scores = {k: hd.read_scores(v) for k, v in runs.items()}
    first = next(iter(scores["mine"]))
    scores["mine"][first] = hd.Score(None, 1, 0.1, "failed")
    log = [
        {"id": k, "response": "the claim", "retrieved_contexts": ["the claim here"], "reference": "the claim"}
        for k in scores["nli"]
    ]
    rows, counts = hd.compare(scores, log, resamples=50)
    assert counts["claims"] == 19 and counts["unscored"] == {"mine": 1, "nli": 0}
    assert {r["judge"] for r in rows} == {"mine", "nli", "k_precision", "recall (sees reference)"}


FINAL = Path(__file__).resolve().parents[1] / "data" / "verifier" / "final_docs"


@pytest.mark.parametrize("name", ["verifier-shipped.jsonl", "nli-qwen2.5-1.5b.jsonl"])
def test_the_final_tables_score_files_are_info_manual_claims_without_text(name):
    """Issue 47's final table (read once): each committed file scores the same 300 label-balanced
    claims about GNU Info manuals, the kind of document kept back from training, and holds no text."""
    lines = [json.loads(x) for x in (FINAL / name).read_text().splitlines() if x.strip()]
    assert all(set(d) == set(hd.EXPORTED_FIELDS) for d in lines)
    assert len({d["id"] for d in lines}) == len(lines) == 300 and sum(d["label"] for d in lines) == 150
    assert all(hd.paragraph_of(d["id"]).startswith("info-manuals:usr/share/info/") for d in lines)
    ids = {json.loads(x)["id"] for x in (FINAL / "verifier-shipped.jsonl").read_text().splitlines() if x.strip()}
    assert {d["id"] for d in lines} == ids
