"""Cost of verifying one answer: the trained verifier against vanilla+nli and vanilla+llm_judge.

Each answer has 1-3 sentences and is verified against 5 passages of about 200 words (synthetic
text this script writes). Each predictor runs in its own process (so peak memory is its own):
it loads, verifies one answer to warm up, then `--answers` answers, timed; the request cache is
off. Printed: seconds per answer, the verifier's time as a ratio of each LLM predictor's, load
time and peak resident memory (VmHWM) per process.

Without `--verifier DIR`, a throwaway verifier is trained for a few seconds on synthetic examples:
its scores mean nothing, its cost is the real one (the network and the reading are the same).

`--encoders A,B` adds, per encoder, a throwaway verifier over it (the first verifier's window and
`read_top`, so the same chunks are read), timed in its own process and printed as a ratio to the
first verifier: what choosing a larger encoder would cost (an encoder other than the packaged
MiniLM is a folder named by VERIRAG_MODEL_PATH_<NAME>). `--no-llm` leaves out the LLM predictors.

    .venv/bin/python benchmarks/bench_verifier.py [--model qwen2.5-1.5b] [--answers 10] [--verifier DIR]
        [--threads N]   # torch threads of the verifier (llama.cpp uses every core)
        [--encoders all-mpnet-base-v2] [--no-llm]
"""

from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = [
    "river",
    "market",
    "council",
    "harbour",
    "bridge",
    "stone",
    "century",
    "visitors",
    "north",
    "road",
    "painted",
    "square",
    "famous",
    "rebuilt",
    "station",
    "tower",
    "mill",
    "school",
    "chapel",
    "castle",
    "garden",
    "library",
    "museum",
    "festival",
    "winter",
    "summer",
]
NAMES = ["Anna", "Boris", "Chen", "Dara", "Emil", "Fatima"]
THINGS = ["boat", "house", "kite", "lamp", "hat", "car"]
COLOURS = ["red", "blue", "green", "yellow", "black", "white"]


def items(n: int, seed: int = 0):
    """(question, answer, 5 passages of ~200 words) with answers of 1, 2, 3 sentences in turn."""
    from verirag.types import Passage

    rng = random.Random(seed)
    out = []
    for i in range(n):
        thing, name, colour = THINGS[i % 6], NAMES[(i // 6) % 6], COLOURS[(i * 5) % 6]
        question = f"What colour is the {thing} of {name}?"
        sentences = [
            f"The {thing} of {name} is {colour}.",
            f"It was painted in {1900 + i}.",
            f"{name} keeps it near the {rng.choice(WORDS)}.",
        ][: 1 + i % 3]
        passages = []
        for j in range(5):
            words = [rng.choice(WORDS) for _ in range(190)]
            if j == i % 5:  # one passage holds the fact, mid-way
                words.insert(95, f"The {thing} of {name} was painted {colour} in {1900 + i}.")
            passages.append(Passage(f"p{j}", " ".join(words)))
        out.append((question, " ".join(sentences), passages))
    return out


def throwaway_verifier(
    folder: Path, encoder: str | None = None, max_length: int | None = None, read_top: int | None = None
) -> None:
    from verirag.learned.encoders import DEFAULT_ENCODER
    from verirag.learned.verifier import TrainedVerifier
    from verirag_lab.train.verifier_examples import VerifierExample

    exs = [
        VerifierExample(q, a, tuple(p.text for p in ps[:2]), i % 2, "bench", f"g{i // 2}")
        for i, (q, a, ps) in enumerate(items(16, seed=1))
    ]
    TrainedVerifier(encoder or DEFAULT_ENCODER, max_length=max_length, read_top=read_top, epochs=1, val_share=0.25).fit(
        exs
    ).save(folder)


def reading_of(verifier: str) -> tuple[int, int | None]:
    """(window in tokens, read_top) of a saved verifier: what another encoder must read alike."""
    d = json.loads((Path(verifier) / "verifier.json").read_text())
    return int(d["state"]["window_"]), d["settings"].get("read_top")


def peak_rss_mb() -> float:
    """This process's peak resident memory (VmHWM: unlike ru_maxrss, not inherited across exec)."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def predictor(name: str, model: str, verifier: str | None):
    if name.startswith("verifier"):
        from verirag.awf.predictors.verifier import TrainedVerifierPredictor

        read_top = int(name.partition("read_top=")[2].rstrip(")")) if "read_top=" in name else None
        return TrainedVerifierPredictor(verifier=verifier, read_top=read_top)
    from verirag.awf.compose import build_method
    from verirag.llm.factory import load_llm

    return build_method(name, load_llm(model, cache=False)).predictor


def child(args) -> None:
    """One predictor in this process: JSON with its timings and peak memory on stdout."""
    threads = None
    if args.only.startswith("verifier"):  # the LLM predictors' processes never import torch
        import torch

        if args.threads:
            torch.set_num_threads(args.threads)
        threads = torch.get_num_threads()
    t0 = time.perf_counter()
    pred = predictor(args.only, args.model, args.verifier)
    load = time.perf_counter() - t0
    data = items(args.answers + 1)
    q, a, ps = data[0]
    pred.verify(q, a, ps)  # warm-up
    t0 = time.perf_counter()
    scores = [pred.verify(q, a, ps).score for q, a, ps in data[1:]]
    seconds = (time.perf_counter() - t0) / args.answers
    print(
        json.dumps(
            {
                "name": args.only if args.only.startswith("verifier") else pred.name,
                "seconds_per_answer": seconds,
                "load_seconds": load,
                "peak_rss_mb": peak_rss_mb(),
                "failed": sum(s != s for s in scores),
                "torch_threads": threads,
            }
        )
    )


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="qwen2.5-1.5b", help="the LLM of vanilla+nli and vanilla+llm_judge")
    ap.add_argument("--answers", type=int, default=10)
    ap.add_argument("--verifier", default=None, help="a verifier folder (default: a throwaway one)")
    ap.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's)")
    ap.add_argument("--encoders", default="", help="comma-separated encoders to time as throwaway verifiers")
    ap.add_argument("--no-llm", action="store_true", help="time the verifiers only")
    ap.add_argument("--only", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--encoder", default=None, help=argparse.SUPPRESS)
    ap.add_argument("--max-length", type=int, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--read-top", type=int, default=None, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.only == "train":  # in its own process too, so its memory is nobody's
        return throwaway_verifier(Path(args.verifier), args.encoder, args.max_length, args.read_top)
    if args.only:
        return child(args)
    with tempfile.TemporaryDirectory() as tmp:
        verifier = args.verifier
        if verifier is None:
            verifier = str(Path(tmp) / "verifier")
            t0 = time.perf_counter()
            subprocess.run([sys.executable, __file__, "--only", "train", "--verifier", verifier], check=True)
            print(
                f"(a throwaway verifier, trained in {time.perf_counter() - t0:.1f} s: its cost is real, its scores not)"
            )
        window, read_top = reading_of(verifier)
        runs = [("verifier", verifier), ("verifier(read_top=2)", verifier)]
        for enc in filter(None, (e.strip() for e in args.encoders.split(","))):
            folder = str(Path(tmp) / f"verifier-{enc.replace('/', '_')}")
            done = subprocess.run(
                [
                    sys.executable,
                    __file__,
                    "--only",
                    "train",
                    "--verifier",
                    folder,
                    "--encoder",
                    enc,
                    "--max-length",
                    str(window),
                ]
                + (["--read-top", str(read_top)] if read_top else []),
                capture_output=True,
                text=True,
            )
            if done.returncode != 0:
                print(f"a throwaway verifier over {enc} failed:\n{done.stderr[-2000:]}")
                continue
            runs.append((f"verifier[{enc}]", folder))
        if not args.no_llm:
            runs += [("vanilla+nli", verifier), ("vanilla+llm_judge", verifier)]
        rows = {}
        for name, folder in runs:
            cmd = [
                sys.executable,
                __file__,
                "--only",
                name.partition("[")[0],
                "--model",
                args.model,
                "--answers",
                str(args.answers),
                "--verifier",
                folder,
            ] + (["--threads", str(args.threads)] if args.threads else [])
            done = subprocess.run(cmd, capture_output=True, text=True)
            if done.returncode != 0:
                print(f"{name} failed:\n{done.stderr[-2000:]}")
                continue
            rows[name] = json.loads(done.stdout.strip().splitlines()[-1])
            if name.startswith("verifier"):
                rows[name]["name"] = name
    print(f"{args.answers} answers of 1-3 sentences, 5 passages of ~200 words each; LLM {args.model}")
    print(f"{'predictor':34} {'s/answer':>9} {'load s':>7} {'peak MB':>8} {'failed':>6}")
    for r in rows.values():
        print(
            f"{r['name']:34} {r['seconds_per_answer']:9.3f} {r['load_seconds']:7.1f} {r['peak_rss_mb']:8.0f} "
            f"{r['failed']:6d}"
        )
    for ours in ("verifier", "verifier(read_top=2)"):
        for name in ("vanilla+nli", "vanilla+llm_judge"):
            if ours in rows and name in rows:
                print(f"{name} / {ours}: {rows[name]['seconds_per_answer'] / rows[ours]['seconds_per_answer']:.1f}x")
    for name in rows:
        if name.startswith("verifier[") and "verifier" in rows:
            print(
                f"{name} / verifier: {rows[name]['seconds_per_answer'] / rows['verifier']['seconds_per_answer']:.1f}x "
                f"(read alike: window {window} tokens, read_top {read_top or 'every chunk'})"
            )
    if "verifier" in rows:
        print(
            f"(verifier on {rows['verifier']['torch_threads']} torch threads, reading "
            f"{f'each sentence against its {read_top} lexically closest chunks' if read_top else 'every chunk'}, "
            "its own setting; read_top=2: the 2 closest)"
        )


if __name__ == "__main__":
    main()
