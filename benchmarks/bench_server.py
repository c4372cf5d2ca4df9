"""The HTTP overhead of `verirag serve`: /v1/verify over loopback against the same verification
called in process (Pipeline.verify), with the same model, in one run.

    .venv/bin/python benchmarks/bench_server.py [--models smollm2-135m qwen2.5-1.5b] [--n 12] [--clients 4]

For each model: N distinct verifications (the request cache is off, so each one runs the model)
one after another in process, then the same N through the server from one client (latency), then
from CLIENTS concurrent clients (throughput: the service runs one request at a time, so concurrency
queues, it does not parallelise). Prints requests/s, p50 and p99, and HTTP / in-process as ratios.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "tests"))

PASSAGES = [
    {
        "id": "a",
        "title": "Ferry",
        "text": "The Harbour Ferry crosses the bay in 25 minutes and runs every hour from six in the morning.",
    },
    {"id": "b", "title": "Puffins", "text": "Puffins nest on the northern cliffs from April to August."},
    {"id": "c", "title": "Lighthouse", "text": "The lighthouse on Skarvoy was kept by Ola Halvorsen until 1961."},
]


def questions(n: int, phase: int) -> list[tuple[str, str]]:
    """N verifications no other phase asks: the llama.cpp prefix store would otherwise serve a
    repeated prompt whole, and the comparison would not be like for like."""
    base = [
        ("How long does the Harbour Ferry take to cross the bay?", "25 minutes"),
        ("When do puffins nest on the cliffs?", "From April to August"),
        ("Who kept the lighthouse on Skarvoy?", "Ola Halvorsen"),
        ("How often does the ferry run?", "Every two hours"),
    ]
    return [(f"{q} (case {phase}.{i})", a) for i, (q, a) in ((i, base[i % len(base)]) for i in range(n))]


def pct(xs: list[float], p: float) -> float:
    xs = sorted(xs)
    return xs[min(len(xs) - 1, round(p * (len(xs) - 1)))]


def in_process(model: str, method: str, items) -> list[float]:
    from verirag.awf.pipeline import Pipeline
    from verirag.types import Passage

    p = Pipeline.from_preset("local", model=model, method=method)
    passages = [Passage(id=x["id"], text=x["text"], title=x["title"]) for x in PASSAGES]
    p.verify("warm-up", "warm-up", passages)
    out = []
    for q, a in items:
        t0 = time.perf_counter()
        p.verify(q, a, passages)
        out.append(time.perf_counter() - t0)
    return out


def over_http(url: str, method: str, items, clients: int) -> tuple[list[float], float]:
    import httpx

    async def main():
        lat: list[float] = []
        queue = list(items)
        async with httpx.AsyncClient(base_url=url, timeout=600) as c:

            async def worker():
                while queue:
                    q, a = queue.pop(0)
                    t0 = time.perf_counter()
                    r = await c.post(
                        "/v1/verify", json={"question": q, "answer": a, "passages": PASSAGES, "method": method}
                    )
                    r.raise_for_status()
                    lat.append(time.perf_counter() - t0)

            t0 = time.perf_counter()
            await asyncio.gather(*(worker() for _ in range(clients)))
            return lat, time.perf_counter() - t0

    return asyncio.run(main())


def main() -> int:
    os.environ["VERIRAG_NO_CACHE"] = "1"  # every request runs the model, on both sides (set here, not at import)
    ap = argparse.ArgumentParser()
    ap.add_argument("--models", nargs="*", default=["smollm2-135m", "qwen2.5-1.5b"])
    ap.add_argument("--n", type=int, default=12)
    ap.add_argument("--clients", type=int, default=4)
    ap.add_argument("--method", default="vanilla+nli", help="the verifier, the same on both sides")
    args = ap.parse_args()
    from server_process import start_server

    print(f"verifier {args.method}, {args.n} verifications per row, request cache off")
    print(f"{'model':14} {'path':22} {'req/s':>7} {'p50 s':>7} {'p99 s':>7} {'vs in-process':>14}")
    for model in args.models:
        local = in_process(model, args.method, questions(args.n, 0))
        local_rps = len(local) / sum(local)
        print(
            f"{model:14} {'in process':22} {local_rps:7.2f} {statistics.median(local):7.3f} {pct(local, 0.99):7.3f} "
            f"{'1.00x':>14}"
        )
        with tempfile.TemporaryDirectory() as tmp:
            server = start_server(
                Path(tmp), "--model", model, "--queue-size", "64", env={"VERIRAG_NO_CACHE": "1"}, ready_timeout=600
            )
            try:
                over_http(server.url, args.method, [("warm-up", "warm-up")], 1)
                for phase, clients in enumerate((1, args.clients), start=1):
                    lat, wall = over_http(server.url, args.method, questions(args.n, phase), clients)
                    rps = len(lat) / wall
                    label = f"HTTP, {clients} client{'s' if clients > 1 else ''}"
                    ratio = statistics.median(lat) / statistics.median(local) if clients == 1 else local_rps / rps
                    what = "p50" if clients == 1 else "time"
                    print(
                        f"{model:14} {label:22} {rps:7.2f} {statistics.median(lat):7.3f} {pct(lat, 0.99):7.3f} "
                        f"{ratio:9.2f}x {what}"
                    )
            finally:
                server.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
