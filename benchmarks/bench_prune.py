"""Seconds per verified answer with and without the context pruner and the machine's llama.cpp
build, on questions the pruner never saw (issue 37).

    VERIRAG_DATA_DIR=../shared/data .venv/bin/python benchmarks/bench_prune.py [--n 200] [--out runs/bench-prune]

Datasets: NQ-open with its top-5 BM25 passages from the oracle + HotpotQA pool (as the AwF configs
build it; about 900 prompt tokens) and HotpotQA in the distractor setting (all 10 paragraphs,
about 1,500 prompt tokens); both restricted to the questions `verirag.train.pruner_examples`
holds out of the pruner's training. The default pipeline (qwen2.5-1.5b, vanilla+verifier,
threshold 0.5) answers and verifies each question from those passages, in these arms, each in
its own process, one after another in the same run:

- `baseline`: today's default: the portable (AVX2) llama.cpp build, every sentence read;
- `build`:    this environment's build (AVX-512 where the CPU has it), every sentence read;
- `prune`:    this build, the shipped pruner at its fitted threshold;
- `prune-q4_0`, `prune-iq4_nl`: the same with the model requantised from its Q4_K_M file to Q4_0 or
  IQ4_NL (llama.cpp's own quantiser, `llama_model_quantize`; made once into the model cache): these
  arms are also compared with `prune`, to decide whether a requantisation pays.

The portable build's wheel is taken from the wheel cache (`scripts/install_llama_cpp.sh` with
VERIRAG_LLAMA_BUILD=avx2 makes it); without it the baseline is this build and the report says so.
The request cache is off (every call is paid); a model-loading question is answered first and not
counted. The arms take turns, `--chunk` questions of each dataset at a time. Each arm's records go
to OUT/ARM.jsonl as they are made: a killed run resumes there, and `--summary-only` reports what
is there.

Reported per dataset: seconds per verified answer (mean; the ratio to the baseline with a paired
bootstrap interval over questions), prompt tokens per answer, accuracy (the answer holds a
reference: token recall 1 or substring) with the paired interval of (arm - baseline), and the
verifier's AwF PR-AUC. The prune arm also scores each answer against the full passages, to decide
whether the verifier should read the pruned or the full text. A plot goes to OUT/seconds.png.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

ARMS = ("baseline", "build", "prune", "prune-q4_0", "prune-iq4_nl")
QUANTS = {"q4_0": "LLAMA_FTYPE_MOSTLY_Q4_0", "iq4_nl": "LLAMA_FTYPE_MOSTLY_IQ4_NL"}


def examples(dataset: str, n: int, seed: int):
    """The held-out questions of `dataset` (at most n, seeded), as verirag Examples."""
    from verirag.datasets.hotpotqa import read_hotpotqa_path
    from verirag.datasets.hotpotqa_original import distractor_example
    from verirag.datasets.nq import load_nq
    from verirag.datasets.registry import data_dir
    from verirag.train.pruner_examples import HOTPOTQA_HELD_OUT, NQ_HELD_OUT, held_out

    root = data_dir()
    if dataset == "nq":
        pool = load_nq(root, k=5, retriever="bm25", seed=seed)
        chosen = [e for e in pool if held_out(e.question, NQ_HELD_OUT)]
    elif dataset == "hotpotqa":
        records = read_hotpotqa_path(root / "hotpotqa_amor_subset")
        chosen = [distractor_example(r, dataset="hotpotqa") for r in records if held_out(r.question, HOTPOTQA_HELD_OUT)]
    else:
        raise SystemExit(f"unknown dataset {dataset!r}: nq or hotpotqa")
    import random

    random.Random(seed).shuffle(chosen)
    return chosen[:n]


def requantised(quant: str) -> str:
    """The default model requantised to `quant` (a QUANTS key), made once beside the model in the
    cache (written to a temporary name, then renamed: a killed run leaves no half file)."""
    import llama_cpp

    from verirag.awf.pipeline import PRESETS
    from verirag.models.resolve import resolve_model

    source = resolve_model(PRESETS["local"].model).path
    target = source.with_name(f"{source.stem}-requantised-{quant}.gguf")
    if not target.exists():
        params = llama_cpp.llama_model_quantize_default_params()
        params.ftype = getattr(llama_cpp, QUANTS[quant])
        params.allow_requantize = True
        params.nthread = os.cpu_count() or 1
        partial = target.with_suffix(".partial")
        if llama_cpp.llama_model_quantize(str(source).encode(), str(partial).encode(), params) != 0:
            raise SystemExit(f"llama.cpp could not requantise {source} to {quant}")
        partial.rename(target)
    return str(target)


class GivenPassages:
    """The index of one question at a time: its benchmark passages, as retrieved."""

    def __init__(self):
        self.hits = []

    def search(self, question, k=5):
        return self.hits


def worker(arm: str, datasets: list[str], n: int, seed: int, out: Path) -> None:
    from dataclasses import replace

    from verirag.awf.pipeline import PRESETS, Pipeline
    from verirag.evaluation.ground_truth import matches
    from verirag.types import ScoredPassage

    path = out / f"{arm}.jsonl"
    done, stored = set(), []
    if path.exists():
        stored = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        done = {r["key"] for r in stored}
    index = GivenPassages()
    pruner = os.environ.get("BENCH_PRUNER") or None  # --pruner, passed through the environment
    threshold = os.environ.get("BENCH_PRUNE_THRESHOLD")  # --prune-threshold, likewise
    pruning = arm.startswith("prune")
    setting = {"threshold": float(threshold) if threshold else None, "pruner": pruner} if pruning else False
    config = replace(PRESETS["local"], prune=setting)
    if arm.startswith("prune-"):
        config = replace(config, model=requantised(arm.removeprefix("prune-")))
    p = Pipeline(config, index=index)
    if pruning:  # a resumed arm goes on at the threshold its records were made at, or not at all
        t = config.prune.threshold if config.prune.threshold is not None else p.context_pruner.threshold_
        other = {r["prune"]["threshold"] for r in stored if r.get("prune")} - {t}
        if other:
            raise SystemExit(f"{path} holds records pruned at {sorted(other)}, not {t}: give another --out")
    import llama_cpp

    build = {"llama_cpp": llama_cpp.__file__, "system_info": llama_cpp.llama_print_system_info().decode()[:300]}
    todo = [(d, e) for d in datasets for e in examples(d, n, seed) if f"{d}:{e.id}" not in done]
    if not todo:
        return
    verifier = None
    if pruning:
        from verirag import Verifier

        verifier = Verifier()
    index.hits = [ScoredPassage(x, 1.0, i) for i, x in enumerate(todo[0][1].passages)]
    p.ask("Warm-up: " + todo[0][1].question)  # loads the models; not counted
    with open(path, "a", encoding="utf-8") as fh:
        for i, (d, e) in enumerate(todo):
            index.hits = [ScoredPassage(x, 1.0, j) for j, x in enumerate(e.passages)]
            t = time.perf_counter()
            r = p.ask(e.question)
            seconds = time.perf_counter() - t
            rec = {
                "key": f"{d}:{e.id}",
                "dataset": d,
                "arm": arm,
                "seconds": seconds,
                "timings": r.timings,
                "prompt_tokens": r.usage.get("prompt_tokens"),
                "answer": r.retrieved_answer,
                "correct": int(matches(r.retrieved_answer, list(e.references), "recall_or_substring")),
                "answerable": int(bool(e.answerable)),
                "score": r.score,
                "error": r.error,
                "build": build,
            }
            if r.prune is not None:
                rec["prune"] = {k: r.prune[k] for k in ("threshold", "fallback", "tokens_read", "tokens_saved")}
                rec["prune"]["hops"] = sum(bool(p.get("hop")) for p in r.prune["passages"])
                full = verifier.verify(e.question, r.retrieved_answer, [x.text for x in e.passages])
                rec["score_full"] = full.score
            fh.write(json.dumps(rec, ensure_ascii=False) + "\n")
            fh.flush()
            print(f"[{arm}] {i + 1}/{len(todo)} {d} {seconds:.1f}s correct={rec['correct']}", flush=True)


def portable_wheel() -> str | None:
    cache = os.environ.get("VERIRAG_WHEEL_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "verirag", "wheels"
    )
    found = sorted(glob.glob(f"{cache}/llama-cpp-avx2-*/llama_cpp_python-*.whl"))
    return found[-1] if found else None


def replace_n(args, n: int):
    return argparse.Namespace(**{**vars(args), "n": n})


def run_arm(arm: str, args, env_extra: dict[str, str]) -> None:
    env = {**os.environ, "VERIRAG_NO_CACHE": "1", **env_extra}
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        arm,
        "--n",
        str(args.n),
        "--seed",
        str(args.seed),
        "--out",
        str(args.out),
    ]
    subprocess.run(cmd + ["--datasets", *args.datasets], env=env, check=True)


def paired(seconds, correct, ref_seconds, ref_correct):
    """(seconds as a ratio to the reference's, accuracy minus the reference's): paired bootstrap
    intervals over the same questions."""
    from verirag.metrics.stats import bootstrap_ci

    ratio = bootstrap_ci(lambda s, b: s.mean() / b.mean(), seconds, ref_seconds, n_resamples=2000)
    diff = bootstrap_ci(lambda x, y: x.mean() - y.mean(), correct, ref_correct, n_resamples=2000)
    return ratio, diff


def summary(out: Path, datasets: list[str], arms: list[str]) -> dict:
    import numpy as np

    from verirag.metrics.awf import pr_auc

    rows = {a: {} for a in arms}
    for a in arms:
        f = out / f"{a}.jsonl"
        if f.exists():
            for line in f.read_text().splitlines():
                r = json.loads(line)
                rows[a][r["key"]] = r
    report = {}
    for d in datasets:
        keys = sorted(set.intersection(*({k for k, r in rows[a].items() if r["dataset"] == d} for a in arms)))
        if not keys:
            continue
        base = np.array([rows["baseline"][k]["seconds"] for k in keys])
        base_ok = np.array([rows["baseline"][k]["correct"] for k in keys], dtype=float)
        entry = {"n": len(keys)}
        for a in arms:
            rs = [rows[a][k] for k in keys]
            sec = np.array([r["seconds"] for r in rs])
            ok = np.array([r["correct"] for r in rs], dtype=float)
            answerable = np.array([r["answerable"] for r in rs])
            scores = np.array([r["score"] for r in rs])
            ratio, diff = paired(sec, ok, base, base_ok)
            e = {
                "seconds": float(sec.mean()),
                "ratio_to_baseline": [ratio.estimate, ratio.low, ratio.high],
                "prompt_tokens": float(np.mean([r["prompt_tokens"] or 0 for r in rs])),
                "accuracy": float(ok.mean()),
                "accuracy_minus_baseline": [diff.estimate, diff.low, diff.high],
                "pr_auc": float(pr_auc(scores, ok.astype(int), answerable, strict=False)),
                "errors": sum(1 for r in rs if r.get("error")),
            }
            if a.startswith("prune-") and "prune" in arms:  # a requantisation against Q4_K_M
                q4km = [rows["prune"][k] for k in keys]
                sec_p = np.array([r["seconds"] for r in q4km])
                ok_p = np.array([r["correct"] for r in q4km], dtype=float)
                vs, dp = paired(sec, ok, sec_p, ok_p)
                e["ratio_to_prune"] = [vs.estimate, vs.low, vs.high]
                e["accuracy_minus_prune"] = [dp.estimate, dp.low, dp.high]
            if a.startswith("prune"):
                # no full-passage score where the question had no passages at all (an error row,
                # counted in `errors`): its own score (0) stands, as in every other arm
                full = np.array([r.get("score_full", r["score"]) for r in rs])
                e["pr_auc_verifier_reads_full"] = float(pr_auc(full, ok.astype(int), answerable, strict=False))
                e["fallbacks"] = sum(1 for r in rs if r.get("prune", {}).get("fallback"))
            entry[a] = e
        report[d] = entry
    return report


def print_report(report: dict, arms: list[str], baseline_note: str) -> None:
    print(f"\nbaseline: {baseline_note}")
    for d, entry in report.items():
        print(f"\n{d} (n={entry['n']} held-out questions)")
        print(
            f"  {'arm':12s} {'s/answer':>9s} {'ratio [95% CI]':>22s} {'tokens':>7s} {'accuracy':>9s} {'acc - base [95% CI]':>26s} {'PR-AUC':>7s}"
        )
        for a in arms:
            e = entry[a]
            r, dd = e["ratio_to_baseline"], e["accuracy_minus_baseline"]
            print(
                f"  {a:12s} {e['seconds']:9.2f} {r[0]:8.3f} [{r[1]:.3f}, {r[2]:.3f}] {e['prompt_tokens']:7.0f} "
                f"{e['accuracy']:9.3f} {dd[0]:+9.3f} [{dd[1]:+.3f}, {dd[2]:+.3f}] {e['pr_auc']:7.3f}"
            )
        for a in arms:
            if "ratio_to_prune" in entry[a]:
                r, dd = entry[a]["ratio_to_prune"], entry[a]["accuracy_minus_prune"]
                print(
                    f"  {a} against prune (Q4_K_M): seconds {r[0]:.3f}x [{r[1]:.3f}, {r[2]:.3f}], "
                    f"accuracy {dd[0]:+.3f} [{dd[1]:+.3f}, {dd[2]:+.3f}]"
                )
        if "prune" in entry:
            print(
                f"  verifier PR-AUC in the prune arm: reading the pruned passages {entry['prune']['pr_auc']:.3f}, "
                f"the full passages {entry['prune']['pr_auc_verifier_reads_full']:.3f}; "
                f"fallbacks (nothing passed) {entry['prune']['fallbacks']}"
            )


def plot(report: dict, arms: list[str], path: Path) -> None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return
    fig, axes = plt.subplots(1, len(report), figsize=(4 * len(report), 3.2), squeeze=False)
    for ax, (d, entry) in zip(axes[0], report.items()):
        vals = [entry[a]["seconds"] for a in arms]
        ax.bar(arms, vals, color=["#999999", "#6a9fd4", "#2c7a3f", "#7fb77e", "#b5d99c"][: len(arms)])
        for i, a in enumerate(arms):
            ax.text(
                i,
                vals[i],
                f"{entry[a]['ratio_to_baseline'][0]:.2f}x\nacc {entry[a]['accuracy']:.2f}",
                ha="center",
                va="bottom",
                fontsize=8,
            )
        ax.set_title(f"{d} (n={entry['n']})")
        ax.set_ylabel("seconds per verified answer")
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200, help="questions per dataset")
    ap.add_argument("--datasets", nargs="+", default=["nq", "hotpotqa"])
    ap.add_argument("--arms", nargs="+", default=list(ARMS), choices=ARMS)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--chunk", type=int, default=20, help="questions per dataset each arm answers in its turn")
    ap.add_argument("--out", type=Path, default=Path("runs/bench-prune"))
    ap.add_argument("--pruner", help="a saved pruner folder (default: the shipped one)")
    ap.add_argument("--prune-threshold", type=float, help="the pruning threshold (default: the pruner's fitted one)")
    ap.add_argument("--summary-only", action="store_true", help="report the records in OUT, run nothing")
    ap.add_argument("--worker", choices=ARMS, help=argparse.SUPPRESS)
    args = ap.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    if args.summary_only:
        report = summary(args.out, args.datasets, list(args.arms))
        print_report(report, list(args.arms), "see summary.json of the run")
        plot(report, list(args.arms), args.out / "seconds.png")
        return
    if args.worker:
        worker(args.worker, args.datasets, args.n, args.seed, args.out)
        return
    if args.pruner:
        os.environ["BENCH_PRUNER"] = str(Path(args.pruner).resolve())
    if args.prune_threshold is not None:
        os.environ["BENCH_PRUNE_THRESHOLD"] = str(args.prune_threshold)
    wheel = portable_wheel()
    baseline_note = f"the portable build ({wheel})" if wheel else "THIS build (no portable wheel in the cache)"
    with tempfile.TemporaryDirectory() as tmp:
        if wheel:
            zipfile.ZipFile(wheel).extractall(tmp)  # its llama_cpp package shadows the installed one
        # the arms take turns, `--chunk` questions of each dataset at a time, so that a run stopped
        # early still compares every arm on the same questions (and the machine's load is shared)
        for upto in range(args.chunk, args.n + args.chunk, args.chunk):
            for arm in args.arms:
                extra = {"PYTHONPATH": tmp + os.pathsep + os.environ.get("PYTHONPATH", "")}
                run_arm(arm, replace_n(args, min(upto, args.n)), extra if arm == "baseline" and wheel else {})
    if "baseline" not in args.arms:
        return
    report = summary(args.out, args.datasets, list(args.arms))
    (args.out / "summary.json").write_text(json.dumps({"baseline": baseline_note, "report": report}, indent=1))
    print_report(report, list(args.arms), baseline_note)
    plot(report, list(args.arms), args.out / "seconds.png")


if __name__ == "__main__":
    main()
