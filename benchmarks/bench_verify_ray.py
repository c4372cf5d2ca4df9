"""`verirag verify LOG --executor ray --workers N` against the local batched run of the same log, in
one run (issue 50): answers per second of each, their ratio, and whether the rows are identical.

The log is `bench_verify_throughput.build_log`'s (NQ-open questions with their gold passage and four
others from the shared benchmark data, 2-4 sentence answers, half of them swapped), written to a
temporary folder. Both arms run `verify_log` with the shipped verifier and the same `--block`, so
the shards of the Ray arm are the blocks of the local arm and the scores must be identical:
- `local`: this process, torch's default threads;
- `ray`: a local Ray instance started for the arm (`--workers` actors, one CPU each), or the
  cluster at `--ray-address`.
Printed for each arm: wall seconds (start, model loading and verification), seconds after the
verifier's identity was known (the model loaded everywhere: verification alone), answers/s of
both; then ray / local, and the number of rows that differ in any field but `seconds`.

    PYTHONPATH=src .venv/bin/python benchmarks/bench_verify_ray.py [--answers 300] [--workers 2] \\
        [--block 32] [--ray-address ADDR] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = Path(os.environ.get("VERIRAG_DATA_DIR") or ROOT.parent / "shared" / "data")
sys.path.insert(0, str(ROOT / "benchmarks"))


def timed_arm(log: Path, out: Path, block: int, **executor) -> dict:
    """verify_log of `log` into `out`: wall seconds, and seconds after the identity was known."""
    from verirag.answer_log import run as run_module
    from verirag.answer_log import verify_log
    from verirag.awf.pipeline import Pipeline

    marks = {}
    kind = run_module.LocalBlocks if executor.get("executor", "local") == "local" else None
    if kind is None:
        from verirag.answer_log.ray_shards import RayShards as kind
    original = kind.identity

    def identity(self, threshold):  # the model is loaded (in every worker) once this returns
        found = original(self, threshold)
        marks["ready"] = time.perf_counter()
        return found

    kind.identity = identity
    try:
        t0 = time.perf_counter()
        verify_log(Pipeline.from_preset("local"), log, out, block=block, **executor)
        t1 = time.perf_counter()
    finally:
        kind.identity = original
    return {"wall": t1 - t0, "verifying": t1 - marks["ready"]}


def _rows(out: Path) -> list[dict]:
    lines = (out / "results.jsonl").read_text(encoding="utf-8").splitlines()
    return [{k: v for k, v in json.loads(x).items() if k != "seconds"} for x in lines if x.strip()]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--answers", type=int, default=300)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--block", type=int, default=32, help="answers per block (a shard of the Ray arm)")
    ap.add_argument("--ray-address", default=None)
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args(argv)
    if not (args.data / "lost_in_the_middle_nq").is_dir():
        raise SystemExit(f"no benchmark data at {args.data} (--data, VERIRAG_DATA_DIR)")
    from bench_verify_throughput import build_log

    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        log = tmp / "log.jsonl"
        log.write_text("".join(json.dumps(r) + "\n" for r in build_log(args.data, args.answers)), encoding="utf-8")
        print(f"log: {args.answers} answers, block {args.block}, {os.cpu_count()} cores")
        arms = {"local": timed_arm(log, tmp / "local", args.block)}
        arms["ray"] = timed_arm(
            log, tmp / "ray", args.block, executor="ray", workers=args.workers, ray_address=args.ray_address
        )
        print(f"{'arm':<16}{'wall s':>9}{'answers/s':>11}{'verifying s':>13}{'answers/s':>11}")
        for name, a in arms.items():
            label = name if name == "local" else f"ray x{args.workers}"
            print(
                f"{label:<16}{a['wall']:>9.1f}{args.answers / a['wall']:>11.2f}"
                f"{a['verifying']:>13.1f}{args.answers / a['verifying']:>11.2f}"
            )
        local, ray = arms["local"], arms["ray"]
        print(
            f"ray / local answers/s: {local['wall'] / ray['wall']:.2f}x wall, "
            f"{local['verifying'] / ray['verifying']:.2f}x verifying"
        )
        a, b = _rows(tmp / "local"), _rows(tmp / "ray")
        differ = sum(x != y for x, y in zip(a, b)) + abs(len(a) - len(b))
        print(f"rows: {len(a)} local, {len(b)} ray; {differ} differ in a field other than seconds")
    return 0 if differ == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
