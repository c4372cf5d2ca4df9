"""The held-out kind of document (issue 36): claims about Debian man pages (the `manpages` and
`manpages-dev` packages, which no training example uses), made by the `doc_claims` recipe without
human labels, and how well each verify judge ranks the supported claims above the others.

This is evaluation data: never train or tune on it.

    # 0. the claims (compact label records; regenerable: `make issue36-labels`)
    verirag label verifier --models none --recipes doc_claims --datasets docs --n 1000 --split heldout \
        --out runs/labels/issue36-docs.heldout.jsonl
    # 1. a seeded, label-balanced sample as a log `verirag verify` reads (under runs/, never
    #    committed: it holds man page text, which is not ours to copy into the repository)
    VERIRAG_DATA_DIR=../shared/data python benchmarks/heldout_docs.py log --n 150 \
        --out runs/heldout_docs/log.jsonl
    # 2. each judge on it (resumable; the request cache keeps LLM calls), one at a time
    verirag verify runs/heldout_docs/log.jsonl --label-field label --out runs/heldout_docs/vanilla+verifier
    VERIRAG_THREADS=1 nice -n 15 verirag verify runs/heldout_docs/log.jsonl --label-field label \
        --method vanilla+nli --model qwen2.5-1.5b --out runs/heldout_docs/vanilla+nli
    VERIRAG_THREADS=1 nice -n 15 verirag verify runs/heldout_docs/log.jsonl --label-field label \
        --method vanilla+llm_judge --model qwen2.5-1.5b --out runs/heldout_docs/vanilla+llm_judge
    # 3. the scores without any document text (id, label, score, seconds, error): committed; any
    #    verify run folder exports the same way (a retrained verifier's too)
    python benchmarks/heldout_docs.py export runs/heldout_docs/vanilla+nli \
        --out data/verifier/heldout_docs/nli-qwen2.5-1.5b.jsonl
    # 4. the table: AUROC [95%, resampling man pages], paired difference to nli, seconds per claim,
    #    the cascade (the shipped band over the verifier's and nli's scores, as `vanilla+cascade`
    #    combines them) and its share sent to the LLM; K-Precision and token recall need the log
    VERIRAG_DATA_DIR=../shared/data python benchmarks/heldout_docs.py compare \
        verifier=data/verifier/heldout_docs/verifier-shipped.jsonl \
        nli=data/verifier/heldout_docs/nli-qwen2.5-1.5b.jsonl \
        llm_judge=data/verifier/heldout_docs/llm_judge-qwen2.5-1.5b.jsonl

The sample is a function of the labels file and the seed only, so `log` remakes the same claims on
any machine with the documentation corpus installed (scripts/install_doc_corpus.sh); the committed
score files name each claim by its record id and carry its label, so `compare` runs without the
corpus (then without the two text metrics). 50 of the sampled claims were checked by hand against
their passages: data/verifier/heldout_docs/hand_check.jsonl (ids, both labels, a note where they differ).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verirag.metrics.calibration import auroc
from verirag.metrics.faithfulness import k_precision
from verirag.metrics.qa import token_recall
from verirag.metrics.stats import group_bootstrap_intervals

ROOT = Path(__file__).resolve().parents[1]
LABELS = ROOT / "runs" / "labels" / "issue36-docs.heldout.jsonl"
LOG = ROOT / "runs" / "heldout_docs" / "log.jsonl"
SCORES = ROOT / "data" / "verifier" / "heldout_docs"
SUPPORTED_KINDS = ("sentence", "cloze")
UNSUPPORTED_KINDS = ("cloze_swapped", "number", "party", "negation", "condition")
REFERENCE_JUDGE = "nli"
# what a score file may hold: never the claim, its question or its passages
EXPORTED_FIELDS = ("id", "label", "score", "seconds", "error")


# ---- the claims ---------------------------------------------------------------------------------
def edit_kind(record_id: str) -> str:
    """How a claim was made: the part of its record id after the paragraph
    ("doc_claims/docs/manpages:usr/share/man/man7/uri.7.gz#19/party/s0" -> "party")."""
    return record_id.rsplit("/", 2)[-2]


def paragraph_of(record_id: str) -> str:
    """The man page paragraph a claim was made from ("manpages:usr/share/man/man7/uri.7.gz#19")."""
    return record_id.rsplit("/", 2)[0].split("/", 2)[-1]


def sample_claims(examples: Sequence[Any], n: int, seed: int = 0) -> list[Any]:
    """A label-balanced sample of `n` claims (n/2 supported, n/2 not; objects with `.source`, the
    record id, and `.label`), at most one per paragraph, spread evenly over each label's edit kinds:
    the kinds take turns, each giving its next claim in a seeded order whose paragraph is still free.
    Returned in a seeded order, so a judge stopped part way has scored a random sample of both labels."""
    rng = np.random.default_rng(seed)
    order = [examples[i] for i in rng.permutation(len(examples))]
    used: set[str] = set()
    picked: list[Any] = []
    for label, want in ((1, n // 2), (0, n - n // 2)):
        queues: dict[str, list[Any]] = {}
        for e in order:
            if e.label == label:
                queues.setdefault(edit_kind(e.source), []).append(e)
        got = 0
        while got < want and any(queues.values()):
            for kind in sorted(queues):
                queue = queues[kind]
                while queue and paragraph_of(queue[0].source) in used:
                    queue.pop(0)
                if queue and got < want:
                    e = queue.pop(0)
                    used.add(paragraph_of(e.source))
                    picked.append(e)
                    got += 1
        if got < want:
            raise ValueError(f"only {got} claims of label {label} on distinct paragraphs, {want} asked")
    return [picked[i] for i in rng.permutation(len(picked))]


def reference_spec(record: dict) -> dict:
    """What a claim should have said, as a text spec of its record: the correct fill of a cloze
    (what both the cloze and the swapped cloze answer), else the passage sentence it was made from
    (the base of its edits)."""
    if edit_kind(record["id"]) == "cloze_swapped":
        blank = record["question"]["join"][1]
        dataset, key, start, _ = blank["edit"]["passage_span"]
        return {"passage_span": [dataset, key, start + int(blank["offset"]), int(blank["length"])]}
    spec = record["answer"]
    while "edit" in spec:
        spec = spec["edit"]
    return spec


def references(labels: Path, ids: set[str], data: Path | None = None) -> dict[str, str]:
    """record id -> reference text of the claims `ids` (resolved like the claims themselves: the
    installed man page must be the labelled version)."""
    from verirag_lab.train.verifier_labels.resolve import resolve

    with open(labels, encoding="utf-8") as fh:
        records = [r for r in map(json.loads, filter(str.strip, fh)) if r.get("id") in ids and "label" in r]
    as_answers = [{**r, "answer": reference_spec(r)} for r in records]
    return {e.source: e.answer for e in resolve(as_answers, data)}


def log_row(e: Any, reference: str | None) -> dict:
    """One claim as a RAGAS log line for `verirag verify` (label 1: supported by the passages)."""
    return {
        "id": e.source,
        "group": e.group,
        "kind": edit_kind(e.source),
        "user_input": e.question,
        "response": e.answer,
        "retrieved_contexts": list(e.passages),
        **({"reference": reference} if reference is not None else {}),
        "label": int(e.label),
    }


def build_rows(labels: Path = LABELS, n: int = 150, seed: int = 0, data: Path | None = None) -> list[dict]:
    """The sample's log rows, made from the labels file and the installed documentation corpus."""
    from verirag_lab.train.verifier import read_examples

    chosen = sample_claims(read_examples([labels]), n, seed)
    refs = references(labels, {e.source for e in chosen}, data)
    return [log_row(e, refs.get(e.source)) for e in chosen]


def heldout_rows(log: Path = LOG) -> list[dict]:
    """The rows of a log `log` wrote (with text; what K-Precision and token recall read)."""
    with open(log, encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


# ---- the scores ---------------------------------------------------------------------------------
@dataclass(frozen=True)
class Score:
    score: float | None  # None: failed or not scored
    label: int | None
    seconds: float | None
    error: str | None


def read_scores(path: Path) -> dict[str, Score]:
    """id -> Score of a `verirag verify --out` folder (its results.jsonl) or of a file `export`
    wrote; the latest line of an id wins (a resumed run appends)."""
    path = Path(path)
    path = path / "results.jsonl" if path.is_dir() else path
    out: dict[str, Score] = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                r = json.loads(line)
                label = r.get("label")
                out[r["id"]] = Score(
                    None if r.get("score") is None else float(r["score"]),
                    None if label is None else int(label),
                    r.get("seconds"),
                    r.get("error"),
                )
    return out


def export(run: Path, out: Path, labels: dict[str, int] | None = None) -> dict[str, int]:
    """The run's scores as EXPORTED_FIELDS lines only (labels from `labels` where the run has none)."""
    scores = read_scores(run)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "w", encoding="utf-8") as fh:
        for k, s in scores.items():
            label = s.label if s.label is not None else (labels or {}).get(k)
            line = {"id": k, "label": label, "score": s.score, "seconds": s.seconds, "error": s.error}
            fh.write(json.dumps(line) + "\n")
    return {"scores": len(scores), "failed": sum(s.score is None for s in scores.values())}


def named_runs(specs: Sequence[str]) -> dict[str, Path]:
    """NAME=FILE arguments (or a bare FILE, named by its file or folder name) -> name -> path."""
    out = {}
    for spec in specs:
        name, _, path = spec.rpartition("=")
        path_ = Path(path)
        out[name or path_.name.removesuffix(".jsonl")] = path_
    return out


def cascade_scores(verifier: np.ndarray, nli: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The shipped cascade's score of each claim and whether it went to the LLM (nli), from the two
    judges' raw scores: what `vanilla+cascade` computes, without running it again."""
    from verirag.learned.cascade import CascadeBand, shipped_cascade_path

    band = CascadeBand.load(shipped_cascade_path())
    return band.combine(verifier, nli), band.inside(band.calibrate("verifier", verifier))


def table(
    ids: list[str],
    y: np.ndarray,
    groups: list[str],
    cols: dict[str, np.ndarray],
    seconds: dict[str, np.ndarray],
    to_llm: dict[str, float],
    resamples: int = 2000,
) -> list[dict]:
    """Per column: AUROC with a 95% interval resampling groups (man pages), its paired difference to
    REFERENCE_JUDGE (all columns on one set of resamples), mean and median seconds, share to the LLM."""
    ref = REFERENCE_JUDGE if REFERENCE_JUDGE in cols else None

    def stat(ix):
        out = {k: np.array([auroc(v[r], y[r]) for r in ix]) for k, v in cols.items()}
        for k in cols:
            if ref and k != ref:
                out[f"{k}-{ref}"] = out[k] - out[ref]
        return out

    res = group_bootstrap_intervals(stat, groups, n_resamples=resamples, seed=0)
    rows = []
    for k in cols:
        diff = res.get(f"{k}-{ref}")
        s = seconds.get(k)
        rows.append(
            {
                "judge": k,
                "n": len(ids),
                "auroc": res[k].estimate,
                "low": res[k].low,
                "high": res[k].high,
                "minus_nli": None if diff is None else [diff.estimate, diff.low, diff.high],
                "mean_s": None if s is None else float(np.mean(s)),
                "median_s": None if s is None else float(np.median(s)),
                "to_llm": to_llm.get(k),
            }
        )
    return rows


def compare(
    runs: dict[str, dict[str, Score]], rows: list[dict] | None = None, resamples: int = 2000
) -> tuple[list[dict], dict]:
    """The table over the claims every run scored. Labels come from the score files, else from
    `rows` (the log, when at hand), which also adds K-Precision and token recall against the
    reference. With a run named "verifier" and one named "nli", the cascade is added. Returns
    (table rows, counts)."""
    names = list(runs)
    ids = [k for k, s in runs[names[0]].items() if all(runs[n].get(k) and runs[n][k].score is not None for n in names)]
    text = {r["id"]: r for r in rows or []}
    if rows is not None:
        ids = [k for k in ids if k in text]
    # a run folder carries no label (verify reads it from the log), an exported file does
    labels = {k: next((runs[n][k].label for n in names if runs[n][k].label is not None), None) for k in ids}
    labels = {k: text[k]["label"] if v is None and k in text else v for k, v in labels.items()}
    if any(v is None for v in labels.values()):
        raise ValueError("claims without a label: compare exported score files, or give the log")
    y = np.array([labels[k] for k in ids])
    cols = {n: np.array([runs[n][k].score for k in ids]) for n in names}
    seconds = {n: np.array([runs[n][k].seconds or 0.0 for k in ids]) for n in names}
    to_llm: dict[str, float] = {}
    if "verifier" in cols and "nli" in cols:
        cols["cascade"], escalated = cascade_scores(cols["verifier"], cols["nli"])
        seconds["cascade"] = seconds["verifier"] + escalated * seconds["nli"]
        to_llm["cascade"] = float(np.mean(escalated))
    if rows is not None:
        cols["k_precision"] = np.array([k_precision(text[k]["response"], text[k]["retrieved_contexts"]) for k in ids])
        if all("reference" in text[k] for k in ids):
            cols["recall (sees reference)"] = np.array(
                [token_recall(text[k]["response"], text[k]["reference"]) for k in ids]
            )
    groups = [k.rsplit("#", 1)[0] for k in ids]  # the man page
    counts = {
        "claims": len(ids),
        "supported": int(y.sum()),
        "man_pages": len(set(groups)),
        "unscored": {n: sum(s.score is None for s in runs[n].values()) for n in names},
    }
    counts["by_kind"] = by_kind(ids, y, cols)
    return table(ids, y, groups, cols, seconds, to_llm, resamples), counts


def by_kind(ids: list[str], y: np.ndarray, cols: dict[str, np.ndarray]) -> dict[str, dict[str, float]]:
    """judge -> unsupported edit kind -> AUROC of every supported claim against that kind's claims:
    which edits a judge tells from the truth (point estimates: about 15 claims a kind)."""
    kinds = np.array([edit_kind(k) for k in ids])
    out = {}
    for name, v in cols.items():
        out[name] = {}
        for kind in UNSUPPORTED_KINDS:
            m = (y == 1) | (kinds == kind)
            if (kinds[m] == kind).any():
                out[name][kind] = auroc(v[m], y[m])
    return out


def markdown(rows: list[dict]) -> str:
    def ci(x):
        return "" if x is None else f"{x[0]:+.3f} [{x[1]:+.3f}, {x[2]:+.3f}]"

    lines = [
        "| judge | n | AUROC [95%] | minus nli | mean s | median s | to LLM |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        s = "| " if r["mean_s"] is None else f"{r['mean_s']:.3f} | {r['median_s']:.3f}"
        llm = "" if r["to_llm"] is None else f"{r['to_llm']:.1%}"
        lines.append(
            f"| {r['judge']} | {r['n']} | {r['auroc']:.3f} [{r['low']:.3f}, {r['high']:.3f}] | "
            f"{ci(r['minus_nli'])} | {s} | {llm} |"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    lg = sub.add_parser("log", help="write the sample as a verify log (holds man page text: keep it under runs/)")
    lg.add_argument("--labels", type=Path, default=LABELS)
    lg.add_argument("--n", type=int, default=150)
    lg.add_argument("--seed", type=int, default=0)
    lg.add_argument("--data", type=Path, default=None, help="the data folder (default: $VERIRAG_DATA_DIR)")
    lg.add_argument("--out", type=Path, default=LOG)
    ex = sub.add_parser("export", help="a verify run's scores without any text: id, label, score, seconds, error")
    ex.add_argument("run", type=Path)
    ex.add_argument("--out", type=Path, required=True)
    ex.add_argument("--log", type=Path, default=LOG, help="labels for a run that has none (default: %(default)s)")
    cp = sub.add_parser("compare", help="the AUROC table of score files or verify run folders")
    cp.add_argument("runs", nargs="+", help="NAME=FILE or FILE (verify --out folder or exported scores)")
    cp.add_argument("--log", type=Path, default=LOG, help="for K-Precision and token recall, if present")
    cp.add_argument("--resamples", type=int, default=2000)
    cp.add_argument("--json", type=Path, default=None, help="also write the table here")
    a = ap.parse_args(argv)
    if a.cmd == "log":
        if a.data is None and not os.environ.get("VERIRAG_DATA_DIR"):
            print("set VERIRAG_DATA_DIR (or --data) to the benchmark data folder", file=sys.stderr)
            return 2
        rows = build_rows(a.labels, a.n, a.seed, a.data)
        a.out.parent.mkdir(parents=True, exist_ok=True)
        with open(a.out, "w", encoding="utf-8") as fh:
            for r in rows:
                fh.write(json.dumps(r, ensure_ascii=False) + "\n")
        kinds = {k: sum(r["kind"] == k for r in rows) for k in (*SUPPORTED_KINDS, *UNSUPPORTED_KINDS)}
        print(f"{len(rows)} claims ({sum(r['label'] for r in rows)} supported; {kinds}) -> {a.out}")
        return 0
    if a.cmd == "export":
        labels = {r["id"]: r["label"] for r in heldout_rows(a.log)} if a.log.exists() else None
        counts = export(a.run, a.out, labels)
        print(f"{counts['scores']} scores ({counts['failed']} failed) -> {a.out}")
        return 0
    runs = {name: read_scores(path) for name, path in named_runs(a.runs).items()}
    rows = heldout_rows(a.log) if a.log.exists() else None
    if rows is None:
        print(f"(no log at {a.log}: K-Precision and token recall left out)")
    res, counts = compare(runs, rows, a.resamples)
    print(
        f"held-out docs: {counts['claims']} claims scored by every run ({counts['supported']} supported), "
        f"{counts['man_pages']} man pages; unscored or failed per run: {counts['unscored']}"
    )
    print(markdown(res))
    print("\nAUROC of the supported claims against each kind of unsupported claim (point estimates):")
    print("| judge | " + " | ".join(UNSUPPORTED_KINDS) + " |\n|---|" + "---|" * len(UNSUPPORTED_KINDS))
    for name, per in counts["by_kind"].items():
        print(f"| {name} | " + " | ".join(f"{per[k]:.3f}" if k in per else "" for k in UNSUPPORTED_KINDS) + " |")
    if a.json:
        a.json.write_text(json.dumps({"rows": res, "counts": counts}, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
