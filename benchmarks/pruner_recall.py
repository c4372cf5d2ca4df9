"""What the context pruner keeps of what answers a question, and how many words, on questions in the
pruning benchmark's shape (NQ's top-5 BM25 passages, HotpotQA's 10 paragraphs). No LLM; minutes.

    VERIRAG_DATA_DIR=../shared/data python benchmarks/pruner_recall.py \
        [--pruner DIR ...] [--thresholds 0.2 0.3 0.4] [--split validation|bench|documents]

The questions are, by default, the pruner's validation questions: the share of the training questions
that `ContextPruner.fit` held out (`val_share`, split by question as it splits them), which no pruner
trained on and which choosing a threshold or a pruner may look at. `--split bench` reads the held-out
questions of benchmarks/bench_prune.py instead: look, never choose, there. `--split documents` reads
documents of another kind, as a user retrieves from them: the licence questions of
benchmarks/bench_prune.py (held out from every training set and every choice: look once) and the
demo's questions over its corpus (the pipeline's own index and k).

Per pruner, dataset and threshold (`fitted`: the pruner's own), with the hop rule the answer path
applies (a passage whose title the question or the kept text names keeps its best sentence;
`--no-hop`: without it):
- words kept: the share of the passages' words the reader would still read;
- answer kept: of the questions whose passages hold a reference answer (normalised words), the share
  whose kept sentences still hold one;
- support kept (HotpotQA): of the questions whose supporting paragraphs are among their passages, the
  share whose every supporting-fact sentence is kept, and the share of supporting paragraphs that keep
  at least one of their supporting sentences.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from verirag.learned.pruner import as_words as norm


def holds(text: str, references) -> bool:
    n = norm(text)
    return any(norm(r).strip() and norm(r) in n for r in references)


def validation_questions(seed: int = 0, val_share: float = 0.15) -> set[str]:
    """The groups ("nq:ROW", "hotpotqa:ID") that `ContextPruner.fit` holds out for validation."""
    from verirag.learned.splits import split_by_group
    from verirag_lab.datasets.registry import data_dir
    from verirag_lab.train.pruner_examples import pruner_examples

    groups = [e.group for e in pruner_examples(data_dir(), seed=seed)]
    _, drawn = split_by_group(groups, val_share, seed)
    return {g for g, d in zip(groups, drawn) if d}


def demo_questions():
    """The shipped demo's answerable questions, each with the passages `verirag demo` retrieves."""
    from verirag import Pipeline
    from verirag.demo import corpus_path, questions
    from verirag.types import Example

    p = Pipeline.from_preset("local")
    p.index(corpus_path())
    out = []
    for i, q in enumerate(questions()):
        if q.get("answers"):
            e = Example(id=str(i), question=q["question"], references=q["answers"], dataset="demo")
            e.passages = [h.passage for h in p.retrieve(q["question"])]
            out.append(e)
    return out


def questions(split: str, n: int, seed: int, val_share: float = 0.15):
    """(dataset, Example, supporting sentences by title) of `split`."""
    from prune_questions import examples, licence_questions

    if split == "documents":
        return [("licences", e, {}) for e in licence_questions()[:n]] + [("demo", e, {}) for e in demo_questions()]

    from verirag_lab.datasets.hotpotqa import read_hotpotqa_path
    from verirag_lab.datasets.hotpotqa_original import distractor_example
    from verirag_lab.datasets.nq import load_nq
    from verirag_lab.datasets.registry import data_dir
    from verirag_lab.train.pruner_examples import _supporting, hotpotqa_records

    raw = {r["_id"]: r for r in hotpotqa_records(data_dir())}

    def support(example_id: str) -> dict[str, list[str]]:
        r = raw[example_id]
        paragraphs = {str(t): ss for t, ss in r["context"]}
        out: dict[str, list[str]] = {}
        for title, i in sorted(_supporting(r["supporting_facts"])):
            if title in paragraphs and i < len(paragraphs[title]) and paragraphs[title][i].strip():
                out.setdefault(title, []).append(paragraphs[title][i].strip())
        return out

    if split == "bench":
        nq, hotpot = examples("nq", n, seed), examples("hotpotqa", n, seed)
    else:
        val = validation_questions(seed, val_share)
        nq = [e for e in load_nq(data_dir(), k=5, retriever="bm25", seed=seed) if f"nq:{e.id}" in val][:n]
        records = read_hotpotqa_path(data_dir() / "hotpotqa_amor_subset")
        hotpot = [distractor_example(r, dataset="hotpotqa") for r in records if f"hotpotqa:{r.id}" in val][:n]
    return [("nq", e, {}) for e in nq] + [("hotpotqa", e, support(e.id)) for e in hotpot]


def measure(pruner, items, thresholds, hop: bool = True) -> dict:
    from verirag.learned.pruner import keep_sentences

    scored = [(d, e, sup, pruner.sentence_scores(e.question, [p.text for p in e.passages])) for d, e, sup in items]
    out = {}
    for t in thresholds:
        t_value = pruner.threshold_ if t == "fitted" else float(t)

        def kept_text(e, per_passage, t_value=t_value) -> str:
            # as `ContextPruner.prune` keeps them in the answer path: the fallback, then the hop rule
            titles = [x.title for x in e.passages] if hop else None
            pruned, _ = keep_sentences(e.question, per_passage, t_value, titles)
            return " ".join(p.text for p in pruned if p.kept)

        for dataset in sorted({d for d, *_ in items}):
            words = kept_words = 0
            answer_in, answer_kept, all_support, paragraphs, paragraphs_kept = 0, 0, [], 0, 0
            for d, e, sup, per_passage in scored:
                if d != dataset:
                    continue
                full = " ".join(" ".join(s) for s, _ in per_passage)
                kept = kept_text(e, per_passage)
                words += len(full.split())
                kept_words += len(kept.split())
                if holds(full, e.references):
                    answer_in += 1
                    answer_kept += holds(kept, e.references)
                if sup:
                    flags = [norm(s) in norm(kept) for ss in sup.values() for s in ss]
                    all_support.append(all(flags))
                    for ss in sup.values():
                        paragraphs += 1
                        paragraphs_kept += any(norm(s) in norm(kept) for s in ss)
            out[(dataset, t)] = {
                "threshold": t_value,
                "questions": sum(1 for d, *_ in items if d == dataset),
                "words_kept": kept_words / max(words, 1),
                "answer_kept": answer_kept / max(answer_in, 1),
                "answer_in": answer_in,
                "support_kept": float(np.mean(all_support)) if all_support else None,
                "support_in": len(all_support),
                "paragraphs_kept": paragraphs_kept / paragraphs if paragraphs else None,
            }
    return out


def main(argv=None) -> int:
    from verirag.learned.pruner import ContextPruner
    from verirag.learned.shipped import shipped_pruner_dir

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument(
        "--pruner", action="append", default=None, help="a pruner folder (repeat; default: the shipped one)"
    )
    ap.add_argument("--thresholds", nargs="+", default=["fitted", "0.2", "0.3", "0.4"])
    ap.add_argument("--split", choices=("validation", "bench", "documents"), default="validation")
    ap.add_argument("--n", type=int, default=200, help="questions per dataset at most")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--no-hop", action="store_true", help="without the hop rule (a named passage keeps its best sentence)"
    )
    a = ap.parse_args(argv)
    folders = a.pruner or [str(shipped_pruner_dir())]
    first = ContextPruner.load(folders[0])
    # the validation questions are the split the (first) pruner was fitted with: its seed and share
    items = questions(a.split, a.n, first.seed if a.split == "validation" else a.seed, first.val_share)
    datasets = sorted({d for d, *_ in items})
    print(f"{a.split} questions: " + ", ".join(f"{d} {sum(1 for x, *_ in items if x == d)}" for d in datasets))
    print("| pruner | dataset | threshold | words kept | answer kept | support kept (all / paragraphs) |")
    print("|---|---|---|---|---|---|")
    for folder in folders:
        pruner = ContextPruner.load(folder)
        if a.split == "validation" and (pruner.seed, pruner.val_share) != (first.seed, first.val_share):
            raise SystemExit(f"{folder} was validated on another split than {folders[0]}: compare them one at a time")
        for (dataset, t), m in measure(pruner, items, a.thresholds, hop=not a.no_hop).items():
            sup = (
                ""
                if m["support_kept"] is None
                else f"{m['support_kept']:.1%} of {m['support_in']} / {m['paragraphs_kept']:.1%}"
            )
            label = f"{t} ({m['threshold']:.3f})" if t == "fitted" else t
            print(
                f"| {Path(folder).name} | {dataset} | {label} | {m['words_kept']:.1%} | "
                f"{m['answer_kept']:.1%} of {m['answer_in']} | {sup} |"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
