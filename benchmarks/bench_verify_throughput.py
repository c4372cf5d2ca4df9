"""Throughput of the batched verifier (issue 50): answers per second of `Verifier().verify_many` over a
log of RAG answers, as a ratio to the one-at-a-time rate of the code before batching, timed in the
same run, with peak memory and the scores' agreement.

The log (written to a temporary folder at run time, never into the repository) is built from the
shared benchmark data read by path: NQ-open questions with their gold passage
(lost_in_the_middle_nq) and four other passages (other NQ gold passages and HotpotQA paragraphs),
each cut to its first ~100 words; the answer is 2-4 sentences taken from the gold passage (label 1)
or, for every other question, from a passage of another question it was not given (label 0, a swap).

Each arm runs in its own process (its peak RSS, VmHWM, is its own), the shipped verifier, the
default method:
- `before`: the code at `--baseline-ref` (git archive of its src/ into a temporary folder: the code
  as it was), `Verifier().verify_many` on the first `--single` rows: one answer after another;
- `single`: this checkout, `Verifier().verify` on the same rows one at a time;
- `batched`: this checkout, `Verifier().verify_many` on every row (blocks of VERIFY_BLOCK answers).
Printed: answers/s of each arm, batched / before (the goal: at least 4x), max |score difference|
of batched against single and against before on the shared rows, AUROC of each arm on those rows
and of batched on all rows, peak RSS. `--dev N` adds the verifier's dev set (instruct_qa_human's
HotpotQA and TopiOCQA rows, `verifier_dev.dev_rows`: evaluation only), its first N rows scored
single and batched: both AUROCs and max |diff|.

    PYTHONPATH=src nice -n 15 .venv/bin/python benchmarks/bench_verify_throughput.py \\
        [--answers 2000] [--single 200] [--threads 2] [--batch-tokens 4096] [--dev 300] \\
        [--baseline-ref 9cd198e] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import random
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("VERIRAG_DATA_DIR") or ROOT.parent / "shared" / "data")
PASSAGE_WORDS = 100
BASELINE_REF = "9cd198e"  # the last commit before batching (issue 50)


# ---- the log -----------------------------------------------------------------------------------
def _words(text: str, n: int = PASSAGE_WORDS) -> str:
    """The first sentences of `text` up to about n words (whole sentences, at least one)."""
    from verirag.retrieval.sentences import split_sentences

    out, count = [], 0
    for s in split_sentences(text):
        if out and count + len(s.split()) > n * 1.2:
            break
        out.append(s)
        count += len(s.split())
    return " ".join(out)


def build_log(data: Path, n: int, seed: int = 0) -> list[dict]:
    """`n` RAGAS-style rows (module doc): user_input, response, retrieved_contexts, label."""
    from verirag.retrieval.sentences import split_sentences

    rng = random.Random(seed)
    nq = []
    with gzip.open(data / "lost_in_the_middle_nq" / "nq-open-oracle.jsonl.gz", "rt", encoding="utf-8") as fh:
        for line in fh:
            d = json.loads(line)
            gold = _words(d["ctxs"][0]["text"])
            if len(split_sentences(gold)) >= 2:
                nq.append((d["question"], gold))
    pool = [g for _, g in nq]
    with open(data / "hotpotqa_amor_subset" / "dev.json", encoding="utf-8") as fh:
        for line in fh:
            for _title, sentences in json.loads(line)["context"]:
                text = _words(" ".join(s.strip() for s in sentences))
                if len(text.split()) >= 40:
                    pool.append(text)
    if len(nq) < n:
        raise SystemExit(f"only {len(nq)} NQ questions with a passage of 2+ sentences, asked for {n}")
    rows = []
    for i, (question, gold) in enumerate(nq[:n]):
        others = rng.sample(pool, 5)
        given = [p for p in others if p != gold][:4]
        label = int(i % 2 == 0)
        source = gold if label else next(p for p in rng.sample(pool, 8) if p != gold and p not in given)
        sentences = split_sentences(source)
        k = min(len(sentences), rng.randint(2, 4))
        start = rng.randint(0, len(sentences) - k)
        contexts = given[:]
        contexts.insert(rng.randint(0, 4), gold)
        rows.append(
            {
                "id": f"nq{i}",
                "user_input": question,
                "response": " ".join(sentences[start : start + k]),
                "retrieved_contexts": contexts,
                "label": label,
            }
        )
    return rows


def dev_log(data: Path, n: int) -> list[dict]:
    sys.path.insert(0, str(ROOT / "benchmarks"))
    from verifier_dev import dev_rows

    return dev_rows(data)[:n]


# ---- one arm, in its own process -----------------------------------------------------------------
def arm(mode: str, log: Path, limit: int, threads: int, batch_tokens: int | None) -> dict:
    """Time one arm (module doc) over the first `limit` rows of `log`; its scores and peak RSS."""
    import torch

    torch.set_num_threads(threads)
    from verirag import Verifier

    rows = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()][:limit]
    items = [
        {"question": r["user_input"], "answer": r["response"], "contexts": r["retrieved_contexts"]}
        | ({"history": r["history"]} if r.get("history") else {})
        for r in rows
    ]
    v = Verifier()
    if batch_tokens:
        from verirag.learned import verifier as trained

        trained.TrainedVerifier.batch_tokens = batch_tokens
    v.verify(items[0]["question"], items[0]["answer"], items[0]["contexts"])  # loads the model, warms up
    t0 = time.perf_counter()
    if mode == "single":
        results = [v.verify(r["question"], r["answer"], r["contexts"], r.get("history")) for r in items]
    else:
        results = v.verify_many(items)
    seconds = time.perf_counter() - t0
    return {
        "mode": mode,
        "answers": len(items),
        "seconds": seconds,
        "scores": [r.score for r in results],
        "errors": sum(r.error is not None for r in results),
        "vmhwm_mb": _vmhwm_mb(),
        "threads": torch.get_num_threads(),
    }


def _vmhwm_mb() -> float:
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def run_arm(src: Path, mode: str, log: Path, limit: int, threads: int, batch_tokens: int | None) -> dict:
    """`arm` in a fresh process over the package at `src`."""
    env = {**os.environ, "PYTHONPATH": str(src)}
    cmd = [sys.executable, __file__, "_arm", mode, str(log), str(limit), str(threads), str(batch_tokens or 0)]
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=False)
    if out.returncode != 0:
        raise SystemExit(f"arm {mode} over {src} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def baseline_src(ref: str, into: Path) -> Path:
    """src/ of commit `ref` of this repository, extracted into `into` (the code as it was)."""
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", ref, "src"], capture_output=True, check=True).stdout
    with tarfile.open(fileobj=__import__("io").BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into / "src"


# ---- the report ------------------------------------------------------------------------------------
def _auroc(scores: list, labels: list) -> float:
    from verirag.metrics.calibration import auroc

    pairs = [(s, y) for s, y in zip(scores, labels) if s is not None]
    return float(auroc([s for s, _ in pairs], [y for _, y in pairs]))


def _max_diff(a: list, b: list) -> float:
    return max((abs(x - y) for x, y in zip(a, b) if x is not None and y is not None), default=float("nan"))


def threads_sweep(src: Path, log: Path, n: int, counts: list[int], batch_tokens: int | None) -> None:
    """Answers/s of the batched arm at each torch thread count, the counts taking turns twice (a
    busy machine's load falls on each alike); the best of each count's two turns, as a ratio to the
    first count's."""
    rates: dict[int, list[float]] = {t: [] for t in counts}
    for _ in range(2):
        for t in counts:
            a = run_arm(src, "many", log, n, t, batch_tokens)
            rates[t].append(a["answers"] / a["seconds"])
    base = max(rates[counts[0]])
    print(f"threads sweep ({n} answers, batched, best of 2 turns):")
    for t in counts:
        print(f"  {t} thread(s): {max(rates[t]):.2f} answers/s, {max(rates[t]) / base:.2f}x of {counts[0]} thread(s)")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--answers", type=int, default=2000)
    ap.add_argument("--single", type=int, default=200, help="rows timed one at a time (a subsample)")
    ap.add_argument("--threads", type=int, default=2, help="torch threads of every arm")
    ap.add_argument("--batch-tokens", type=int, default=0, help="tokens of a forward pass (0: the default)")
    ap.add_argument("--dev", type=int, default=0, help="also score the first N dev rows, single and batched")
    ap.add_argument("--baseline-ref", default=BASELINE_REF)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--skip-before", action="store_true", help="leave out the old code's arm")
    ap.add_argument(
        "--threads-sweep",
        type=int,
        nargs="+",
        default=[],
        help="also time the batched arm at each of these torch thread counts (on --sweep-rows rows, "
        "the counts taking turns twice): the thread setting measured on this machine",
    )
    ap.add_argument("--sweep-rows", type=int, default=400)
    args = ap.parse_args(argv)
    if not (args.data / "lost_in_the_middle_nq").is_dir():
        raise SystemExit(f"no benchmark data at {args.data} (--data, VERIRAG_DATA_DIR)")
    here = ROOT / "src"
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        rows = build_log(args.data, args.answers)
        log = tmp / "log.jsonl"
        log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
        labels = [r["label"] for r in rows]
        words = [len(r["response"].split()) for r in rows]
        print(
            f"log: {len(rows)} answers, {sum(labels)} supported, answer words mean {sum(words) / len(words):.0f}, "
            f"threads {args.threads}, batch tokens {args.batch_tokens or 'default'}"
        )
        n = min(args.single, len(rows))
        arms = {}
        if not args.skip_before:
            arms["before"] = run_arm(baseline_src(args.baseline_ref, tmp / "before"), "many", log, n, args.threads, 0)
        arms["single"] = run_arm(here, "single", log, n, args.threads, args.batch_tokens)
        arms["batched"] = run_arm(here, "many", log, len(rows), args.threads, args.batch_tokens)
        print(f"{'arm':<9}{'answers':>8}{'seconds':>9}{'answers/s':>11}{'AUROC':>8}{'peak RSS MB':>13}{'errors':>8}")
        for name, a in arms.items():
            rate = a["answers"] / a["seconds"]
            au = _auroc(a["scores"], labels[: a["answers"]])
            print(
                f"{name:<9}{a['answers']:>8}{a['seconds']:>9.1f}{rate:>11.2f}{au:>8.3f}{a['vmhwm_mb']:>13.0f}{a['errors']:>8}"
            )
        batched = arms["batched"]
        rate = batched["answers"] / batched["seconds"]
        for name in ("before", "single"):
            if name in arms:
                a = arms[name]
                print(
                    f"batched / {name}: {rate / (a['answers'] / a['seconds']):.2f}x; max |score diff| over "
                    f"{a['answers']} shared rows {_max_diff(batched['scores'], a['scores']):.2e}; AUROC there "
                    f"{_auroc(batched['scores'][:n], labels[:n]):.3f} (batched) vs {_auroc(a['scores'], labels[:n]):.3f}"
                )
        if args.threads_sweep:
            threads_sweep(here, log, min(args.sweep_rows, len(rows)), args.threads_sweep, args.batch_tokens)
        if args.dev:
            dev = dev_log(args.data, args.dev)
            dlog = tmp / "dev.jsonl"
            dlog.write_text("".join(json.dumps(r) + "\n" for r in dev), encoding="utf-8")
            dl = [r["label"] for r in dev]
            s = run_arm(here, "single", dlog, len(dev), args.threads, args.batch_tokens)
            b = run_arm(here, "many", dlog, len(dev), args.threads, args.batch_tokens)
            print(
                f"dev ({len(dev)} rows): AUROC single {_auroc(s['scores'], dl):.4f}, batched "
                f"{_auroc(b['scores'], dl):.4f}, max |diff| {_max_diff(s['scores'], b['scores']):.2e}; "
                f"answers/s single {len(dev) / s['seconds']:.2f}, batched {len(dev) / b['seconds']:.2f}"
            )
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_arm":
        mode, log, limit, threads, batch_tokens = sys.argv[2:7]
        print(json.dumps(arm(mode, Path(log), int(limit), int(threads), int(batch_tokens) or None)))
        sys.exit(0)
    sys.exit(main())
