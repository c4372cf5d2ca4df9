"""How noisy the dev set's human labels are, and the AUROC they let any judge show.

instruct_qa_human gives the answers of four LLMs to each question a correctness label. Where two
of them gave the same answer (the same words once normalised: case, punctuation, articles), a
consistent annotator labels both alike. This counts such pairs per dataset, the share with opposite
labels, the flip rate that share implies and the AUROC a perfect judge would measure against labels
that noisy (`verirag_lab.label_noise`: independent, symmetric flips, an assumption), with 95%
intervals resampling questions. It reads only labels and answers (no model) and prints ids, never text.

    VERIRAG_DATA_DIR=../shared/data python benchmarks/dev_label_noise.py [--json FILE]

Evaluation data: nothing trains or tunes on it; this only says how far its numbers can be read.
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from collections import Counter, defaultdict
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from verifier_dev import DATA, DEV_DATASETS, SOURCE, dev_rows

from verirag.metrics._text import get_tokens
from verirag_lab.label_noise import auroc_ceiling, flip_rate_from_disagreement

RESAMPLES = 2000


def repeated_answer_pairs(rows: list[dict]) -> dict[str, list[tuple[dict, dict]]]:
    """{question: [each pair of its answers (rows) with the same normalised words]}."""
    by_question: dict[str, list[dict]] = defaultdict(list)
    for r in rows:
        by_question[r["group"]].append(r)
    out = {}
    for group, answers in by_question.items():
        words = [tuple(get_tokens(a["response"] or "")) for a in answers]
        out[group] = [
            (answers[i], answers[j])
            for i, j in itertools.combinations(range(len(answers)), 2)
            if words[i] and words[i] == words[j]
        ]
    return out


def noise_summary(rows: list[dict], *, resamples: int = RESAMPLES, seed: int = 0) -> dict:
    """Pairs, disagreements, their share, the implied flip rate and AUROC ceiling, each with a 95%
    interval resampling questions; which model's answer carried the 0 in each disagreement."""
    pairs = repeated_answer_pairs(rows)
    groups = sorted(pairs)
    n_pairs = np.array([len(pairs[g]) for g in groups])
    n_disagree = np.array([sum(a["label"] != b["label"] for a, b in pairs[g]) for g in groups])
    labels_by_group = defaultdict(list)
    for r in rows:
        labels_by_group[r["group"]].append(r["label"])
    pos = np.array([sum(labels_by_group[g]) for g in groups])
    tot = np.array([len(labels_by_group[g]) for g in groups])

    def stats(idx: np.ndarray) -> tuple[float, float, float]:
        p, d = n_pairs[idx].sum(), n_disagree[idx].sum()
        share = d / p if p else math.nan
        e = flip_rate_from_disagreement(share) if p else math.nan
        q = pos[idx].sum() / tot[idx].sum()
        return share, e, (auroc_ceiling(q, e) if p and 0 < q < 1 else math.nan)

    point = stats(np.arange(len(groups)))
    rng = np.random.default_rng(seed)
    draws = np.array([stats(rng.integers(0, len(groups), len(groups))) for _ in range(resamples)])
    lo, hi = np.nanpercentile(draws, 2.5, axis=0), np.nanpercentile(draws, 97.5, axis=0)
    zero_by_model = Counter(  # whose answer holds the 0 of a disagreeing pair
        (a if a["label"] == 0 else b)["id"].rsplit(":", 1)[1]
        for g in groups
        for a, b in pairs[g]
        if a["label"] != b["label"]
    )
    names = ("disagreement", "flip_rate", "auroc_ceiling")
    return {
        "answers": int(tot.sum()),
        "correct_share": float(pos.sum() / tot.sum()),
        "pairs": int(n_pairs.sum()),
        "disagreeing_pairs": int(n_disagree.sum()),
        **{n: {"value": float(point[k]), "ci95": [float(lo[k]), float(hi[k])]} for k, n in enumerate(names)},
        "zero_label_by_model": dict(sorted(zero_by_model.items())),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=DATA, help="the shared data folder (VERIRAG_DATA_DIR)")
    ap.add_argument("--resamples", type=int, default=RESAMPLES)
    ap.add_argument("--json", type=Path, default=None, help="also write the numbers here")
    args = ap.parse_args(argv)
    if not (args.data / SOURCE).is_file():
        raise SystemExit(f"{args.data / SOURCE} is missing: set VERIRAG_DATA_DIR to the shared data folder")
    rows = dev_rows(args.data)
    out = {
        ds: noise_summary([r for r in rows if r["group"].startswith(ds + ":")], resamples=args.resamples)
        for ds in DEV_DATASETS
    }

    def cell(d: dict) -> str:
        return f"{d['value']:.3f} [{d['ci95'][0]:.3f}, {d['ci95'][1]:.3f}]"

    print(
        "| dataset | answers | correct | pairs of equal answers | with opposite labels | share | implied flip rate | AUROC ceiling |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for ds, s in out.items():
        print(
            f"| {ds} | {s['answers']} | {s['correct_share']:.3f} | {s['pairs']} | {s['disagreeing_pairs']} | "
            f"{cell(s['disagreement'])} | {cell(s['flip_rate'])} | {cell(s['auroc_ceiling'])} |"
        )
    for ds, s in out.items():
        print(f"{ds}: the 0 of a disagreeing pair was the answer of {s['zero_label_by_model']}")
    if args.json:
        args.json.write_text(json.dumps(out, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
