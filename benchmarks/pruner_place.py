"""How much of a corpus about one place the context pruner keeps because the question names the
place. No LLM; seconds.

    python benchmarks/pruner_place.py [--pruner DIR ...] [--place Skarvøy --as "the island"]

The demo's pages all tell about one island and name it, as does one of its questions. Per pruner and
demo question: over the sentences of the pages that do not hold the answer (every page for the
question without one), the mean score and the share of their words kept at the pruner's
conservative threshold, as the pages are and with the place's name replaced in them (the question
unchanged); and whether the answering page still keeps its answer. Whole pages are scored (not the
pipeline's retrieval), so the numbers say what the pruner makes of a page, not what `ask` reads.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from pruner_recall import holds as page_holds  # an answer named in the text, as pruner_recall reads it


def off_page_effect(scored, answering: list[bool], threshold: float) -> dict:
    """Over the sentences of the pages not `answering`: mean score and share of words at or above
    `threshold`; `scored` is the pruner's (sentences, scores) per page."""
    scores, words, kept = [], 0, 0
    for (sentences, values), holds in zip(scored, answering):
        if holds:
            continue
        for s, v in zip(sentences, values):
            n = len(s.split())
            scores.append(v)
            words += n
            kept += n if v >= threshold else 0
    return {
        "mean_score": float(np.mean(scores)) if scores else float("nan"),
        "words_kept": kept / words if words else 0.0,
    }


def answer_kept(scored, answering: list[bool], answers, threshold: float) -> bool | None:
    """Whether the kept sentences of the answering pages hold an answer (None: no page holds one)."""
    if not any(answering):
        return None
    kept = " ".join(s for (ss, vs), h in zip(scored, answering) if h for s, v in zip(ss, vs) if v >= threshold)
    return page_holds(kept, answers)


def measure(pruner, pages: list[str], questions: list[dict], place: str, replacement: str) -> list[dict]:
    threshold = pruner.named_threshold("conservative")
    moved = [p.replace(place, replacement) for p in pages]
    rows = []
    for q in questions:
        answers = q.get("answers") or []
        answering = [bool(answers) and page_holds(p, answers) for p in pages]
        row = {"question": q["question"]}
        for name, texts in (("named", pages), ("replaced", moved)):
            scored = pruner.sentence_scores(q["question"], texts)
            row[name] = off_page_effect(scored, answering, threshold)
            row[name]["answer_kept"] = answer_kept(scored, answering, answers, threshold)
        rows.append(row)
    return rows


def main(argv=None) -> int:
    from verirag.demo import corpus_path, questions
    from verirag.learned.pruner import ContextPruner
    from verirag.learned.shipped import shipped_pruner_dir

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pruner", nargs="+", default=None, help="pruner folders (default: the shipped one)")
    ap.add_argument("--place", default="Skarvøy")
    ap.add_argument("--as", dest="replacement", default="the island")
    args = ap.parse_args(argv)
    pages = [f.read_text(encoding="utf-8") for f in sorted(corpus_path().glob("*.md"))]
    for folder in args.pruner or [str(shipped_pruner_dir())]:
        pruner = ContextPruner.load(folder)
        print(f"{folder} (conservative threshold {pruner.named_threshold('conservative'):.3f})")
        for r in measure(pruner, pages, questions(), args.place, args.replacement):
            cells = "  ".join(
                f"{k}: mean {r[k]['mean_score']:.2f}, words kept {r[k]['words_kept']:.0%}"
                + ("" if r[k]["answer_kept"] is None else f", answer kept {'yes' if r[k]['answer_kept'] else 'NO'}")
                for k in ("named", "replaced")
            )
            print(f"  {r['question'][:60]:60s}  {cells}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
