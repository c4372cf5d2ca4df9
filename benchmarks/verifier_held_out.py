"""Write the question groups a trained verifier held out of training, as an eval `groups` file.

The verifier's own validation questions are the only NQ and HotpotQA questions no training example
saw (the swap recipe reaches every usable question of the label sources), so the local generator's
answers to them measure the verifier beside self_check and nli without leakage. They did choose the
best epoch and the temperature: say so where the numbers are quoted.

    python benchmarks/verifier_held_out.py src/verirag/learned/shipped/verifier \\
        runs/labels/swap.jsonl data/verifier/labels/*.jsonl --out runs/verifier_held_out.txt

The labels must be the ones the verifier was trained on: their fingerprint is checked.
"""

from __future__ import annotations

import argparse
import json
import os
from collections import Counter
from pathlib import Path

from verirag.learned.verifier import TrainedVerifier
from verirag.learned.verifier_trainer import examples_fingerprint
from verirag_lab.train.verifier import read_examples


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("verifier", type=Path, help="a trained verifier folder (its verifier.json)")
    ap.add_argument("labels", type=Path, nargs="+", help="the labels files it was trained on, in order")
    ap.add_argument("--out", type=Path, required=True, help="the groups file to write (DATASET:GROUP lines)")
    ap.add_argument(
        "--data", type=Path, help="the benchmark data folder (default: $VERIRAG_DATA_DIR, else ../shared/data)"
    )
    args = ap.parse_args()
    # the compact labels are resolved against the benchmark files, looked up in $VERIRAG_DATA_DIR
    default = os.environ.get("VERIRAG_DATA_DIR") or Path(__file__).resolve().parents[2] / "shared" / "data"
    os.environ["VERIRAG_DATA_DIR"] = str(args.data or default)
    saved = json.loads((args.verifier / "verifier.json").read_text())
    settings = saved["settings"]
    v = TrainedVerifier(val_share=settings["val_share"], seed=settings["seed"])
    examples = read_examples(args.labels, settings.get("max_examples"), v.seed)
    if examples_fingerprint(examples) != saved["fingerprints"]["data"]:
        raise SystemExit("these labels are not the ones the verifier was trained on (data fingerprint differs)")
    groups = v.validation_groups(examples)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text("".join(f"{g}\n" for g in groups))
    per = Counter(g.split(":", 1)[0] for g in groups)
    print(
        f"{len(groups)} held-out question groups -> {args.out}: "
        + ", ".join(f"{k} {n}" for k, n in sorted(per.items()))
    )


if __name__ == "__main__":
    main()
