"""The awf-small method grid per question, from a cold cache: without prefix reuse (as before
issue 9), with reuse, and with reuse and the shared prompt layout, in one run on one machine.

Each setting runs the methods of configs/awf-small.yaml on the same N NQ questions in its own
process, with the request cache off, and prints seconds per question, the tokens the model read
and reused, the prefix store's peak against its budget, peak RSS, and the speed-up over the first
setting. With --check-identical it also runs reuse off at the same n_batch and checks that the
records equal those with reuse on (the numbers must not depend on reuse).

    .venv/bin/python benchmarks/bench_grid_reuse.py [--n 5] [--model qwen2.5-0.5b] [--check-identical]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
# name -> (VERIRAG_PREFIX_REUSE, VERIRAG_N_BATCH, prompt layout)
SETTINGS = {
    "before (no reuse, n_batch 512)": ("0", "512", "paper"),
    "reuse, paper layout": ("1", "64", "paper"),
    "reuse, shared layout": ("1", "64", "shared"),
}
NO_REUSE_SAME_BATCH = ("no reuse, paper layout", ("0", "64", "paper"))


def grid_methods() -> list[str]:
    cfg = yaml.safe_load((REPO / "configs" / "awf-small.yaml").read_text())
    return [m if isinstance(m, str) else m["name"] for m in cfg["methods"]]


def child(args) -> None:
    """Run one setting; print one JSON line of measurements."""
    import resource

    from verirag.llm import factory
    from verirag.records import ResultStore
    from verirag_lab.experiments.grid.config import parse_config
    from verirag_lab.experiments.grid.runner import run_experiment

    cfg = parse_config(
        {
            "name": "bench-grid",
            "models": [args.model],
            "methods": grid_methods(),
            "datasets": [
                {
                    "name": "nq",
                    "n": args.n,
                    "seed": args.seed,
                    "path": str(DATA),
                    "options": {"k": 5, "retriever": "bm25"},
                    "method_options": {"layout": args.layout},
                }
            ],
            "generation": {"max_tokens": 160, "n_ctx": 4096},
        }
    )
    t = time.perf_counter()
    outcome = run_experiment(cfg, args.out, progress=False)
    seconds = time.perf_counter() - t
    stats = {}
    for llm in factory._LOADED.values():
        while not hasattr(llm, "prefix_stats") and hasattr(llm, "inner"):
            llm = llm.inner
        stats = llm.prefix_stats() if hasattr(llm, "prefix_stats") else {}
    records = {r.key: [r.answer, r.score, r.error] for r in ResultStore(args.out).load()}
    print(
        json.dumps(
            {
                "seconds": seconds,
                "failures": len(outcome.failures),
                "written": outcome.written,
                "stats": stats,
                "records": records,
                "rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            }
        )
    )


def run_setting(args, name, setting, root: Path) -> dict:
    reuse, n_batch, layout = setting
    env = {**os.environ, "VERIRAG_NO_CACHE": "1", "VERIRAG_PREFIX_REUSE": reuse, "VERIRAG_N_BATCH": n_batch}
    out = root / name.replace(" ", "_").replace(",", "").replace("(", "").replace(")", "")
    cmd = [
        sys.executable,
        __file__,
        "--child",
        "--n",
        str(args.n),
        "--seed",
        str(args.seed),
        "--model",
        args.model,
        "--layout",
        layout,
        "--out",
        str(out),
    ]
    print(f"running: {name} ...", flush=True)
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        raise SystemExit(f"{name} failed:\n{proc.stderr[-3000:]}")
    return json.loads(proc.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--model", default="qwen2.5-0.5b")
    ap.add_argument("--check-identical", action="store_true")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--layout", default="paper", help=argparse.SUPPRESS)
    ap.add_argument("--out", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if not DATA.is_dir():
        raise SystemExit(f"{DATA} not found: this benchmark reads ../shared/data")
    if args.child:
        return child(args)

    settings = dict(SETTINGS)
    if args.check_identical:
        settings[NO_REUSE_SAME_BATCH[0]] = NO_REUSE_SAME_BATCH[1]
    with tempfile.TemporaryDirectory(prefix="bench-grid-") as tmp:
        results = {name: run_setting(args, name, s, Path(tmp)) for name, s in settings.items()}
    base = results[next(iter(SETTINGS))]["seconds"]
    methods = grid_methods()
    print(f"\n{args.n} NQ questions x {len(methods)} methods, {args.model}, cold (request cache off)")
    print(
        f"{'setting':34s} {'s/question':>10s} {'speed-up':>8s} {'read':>8s} {'reused':>8s} "
        f"{'store peak/budget MB':>21s} {'RSS MB':>7s} {'failures':>8s}"
    )
    for name, r in results.items():
        st = r["stats"]
        store = (
            f"{st.get('peak_bytes', 0) / 2**20:.0f}/{st.get('budget_bytes', 0) / 2**20:.0f}"
            if st.get("budget_bytes")
            else "-"
        )
        print(
            f"{name:34s} {r['seconds'] / args.n:10.1f} {base / r['seconds']:8.2f} "
            f"{st.get('tokens_evaluated', 0):8d} {st.get('tokens_reused', 0):8d} {store:>21s} "
            f"{r['rss_mb']:7.0f} {r['failures']:8d}"
        )
    if args.check_identical:
        same = results["reuse, paper layout"]["records"] == results[NO_REUSE_SAME_BATCH[0]]["records"]
        print(f"records with reuse on == records with reuse off (n_batch 64, paper layout): {same}")
        if not same:
            sys.exit(1)


if __name__ == "__main__":
    main()
