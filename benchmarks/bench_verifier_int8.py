"""The trained verifier in int8 against float (issue 50): answers per second through the batched path
(`TrainedVerifier.support_many`), peak memory, and what int8 changes in the scores, for
- `float`: the shipped verifier as it loads (`precision="float"`);
- `torch-int8`: torch's dynamic quantisation (`torch.ao.quantization.quantize_dynamic`) of the
  encoder's linear maps, int8 weights with one scale per output channel, activations quantised per
  tensor as they come (the head and the embeddings stay float);
- `torch-int8-tensor`: the same with one scale per weight matrix (torch's default qconfig);
- `ort-int8`: ONNX Runtime: the float network exported to ONNX (opset 17, dynamic batch and length),
  then `onnxruntime.quantization.quantize_dynamic` (QInt8 weights, per channel), run with as many
  intra-op threads as torch has. Needs `onnxruntime` and `onnx` (not verirag's dependencies: the
  variant is left out, saying so, where they are missing).

Speed, in one process: every variant is loaded, then the log is scored in blocks of `--block`
answers, each block by every variant in turn (the order rotating from block to block), so a busy
host slows each variant alike; printed: each variant's total seconds, answers/s and speed-up over
float, and the median of the per-block speed-ups. Memory, each variant in its own process (its
peak RSS, VmHWM, is its own): load, build, score the first 100 answers. The log is
`bench_verify_throughput.build_log` (NQ-open questions, 5 passages of ~100 words, 2-4 sentence
answers, half of them from a passage not given), written nowhere.

Accuracy: on the log, max |score difference| from float and verdicts changed at 0.5, and how far an
answer's int8 score depends on the answers batched with it (the first `--alone` answers scored one
at a time against their batched scores: dynamic quantisation picks an activation scale per batch);
with `--dev`, the
verifier's dev set (`verifier_dev.dev_rows`: instruct_qa_human's HotpotQA and TopiOCQA rows, TopiOCQA
with its history; evaluation data, never trained or tuned on) scored by every variant, AUROC per
dataset (`verirag.metrics.calibration.auroc`, as `verifier_dev.py compare` computes it) and the
difference from float (the adoption rule: within 0.005).

    PYTHONPATH=src .venv/bin/python benchmarks/bench_verifier_int8.py [--answers 400] [--block 20] \\
        [--threads 2] [--dev] [--variants float,torch-int8,ort-int8] [--data ../shared/data]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_verify_throughput import DATA, _max_diff, _vmhwm_mb, build_log  # noqa: E402

VARIANTS = ("float", "torch-int8", "torch-int8-tensor", "ort-int8")
MEMORY_ROWS = 100


# ---- the variants ---------------------------------------------------------------------------------
def drop_merged_lora(scorer) -> None:
    """Replace each LoRA wrapper, whose update the loaded verifier has folded into its weight
    (`merge_lora`), by the plain linear map it wraps: the same function, and what quantisers know."""
    from peft.tuners.lora.layer import LoraLayer

    for parent in list(scorer.modules()):
        for name, child in list(parent.named_children()):
            if isinstance(child, LoraLayer):
                assert child.merged, "the loaded verifier folds its LoRA updates in"
                setattr(parent, name, child.get_base_layer())


def torch_int8(scorer, per_channel: bool):
    """`scorer` with torch's dynamic int8 linear maps in its encoder, in place."""
    import torch
    from torch.ao.quantization import default_dynamic_qconfig, per_channel_dynamic_qconfig, quantize_dynamic

    drop_merged_lora(scorer)
    scorer.eval()
    qconfig = per_channel_dynamic_qconfig if per_channel else default_dynamic_qconfig
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # torch announces that eager-mode quantisation moves to torchao
        scorer.encoder = quantize_dynamic(scorer.encoder, {torch.nn.Linear: qconfig}, dtype=torch.qint8, inplace=True)
    return scorer


class OrtScorer:
    """An ONNX Runtime session called as a PairScorer is (`sorted_pair_logits` reads logits from it)."""

    def __init__(self, path: Path, threads: int):
        import onnxruntime as ort
        import torch

        opts = ort.SessionOptions()
        opts.intra_op_num_threads, opts.inter_op_num_threads = threads, 1
        self.session = ort.InferenceSession(str(path), opts, providers=["CPUExecutionProvider"])
        self.inputs = [i.name for i in self.session.get_inputs()]
        self._anchor = torch.zeros(1)  # sorted_pair_logits asks the parameters for the device

    def parameters(self):
        yield self._anchor

    def eval(self):
        return self

    def __call__(self, input_ids, attention_mask, token_type_ids=None):
        import torch

        feed = {"input_ids": input_ids, "attention_mask": attention_mask, "token_type_ids": token_type_ids}
        out = self.session.run(None, {k: feed[k].numpy() for k in self.inputs})[0]
        return torch.from_numpy(out)


def ort_int8(scorer, into: Path, threads: int) -> OrtScorer:
    """The float network (LoRA folded, `drop_merged_lora`) exported to ONNX and quantised by ONNX Runtime."""
    import copy

    import torch
    from onnxruntime.quantization import QuantType, quantize_dynamic

    plain = copy.deepcopy(scorer)
    drop_merged_lora(plain)
    plain.eval()
    ids = torch.ones(2, 16, dtype=torch.long)
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            plain,
            (ids, torch.ones_like(ids), torch.zeros_like(ids)),
            str(into / "float.onnx"),
            input_names=names,
            output_names=["logits"],
            dynamic_axes={n: {0: "batch", 1: "length"} for n in names} | {"logits": {0: "batch"}},
            opset_version=17,
            dynamo=False,
        )
    quantize_dynamic(str(into / "float.onnx"), str(into / "int8.onnx"), weight_type=QuantType.QInt8, per_channel=True)
    return OrtScorer(into / "int8.onnx", threads)


def build(name: str, tmp: Path, threads: int):
    """A TrainedVerifier (the shipped one) scoring with variant `name`."""
    from verirag.learned.shipped import shipped_verifier_dir
    from verirag.learned.verifier import TrainedVerifier

    v = TrainedVerifier.load(shipped_verifier_dir())
    v.pair_cache_key = None  # each variant computes its own logits: the shared cache would hand it the float ones
    if name in ("torch-int8", "torch-int8-tensor"):
        v._scorer = torch_int8(v._scorer, per_channel=name == "torch-int8")
    elif name == "ort-int8":
        (tmp / name).mkdir(exist_ok=True)
        v._scorer = ort_int8(v._scorer, tmp / name, threads)
    elif name != "float":
        raise SystemExit(f"unknown variant {name}; known: {', '.join(VARIANTS)}")
    return v


def available(names: list[str]) -> list[str]:
    out = []
    for n in names:
        if n.startswith("ort"):
            try:
                import onnx  # noqa: F401
                import onnxruntime  # noqa: F401
            except ImportError:
                print(f"{n}: left out (needs onnxruntime and onnx: pip install onnxruntime onnx)")
                continue
        out.append(n)
    return out


# ---- scoring ----------------------------------------------------------------------------------------
def score(v, rows: list[dict]) -> list[float | None]:
    out = v.support_many(
        [r["user_input"] for r in rows],
        [r["response"] for r in rows],
        [r["retrieved_contexts"] for r in rows],
        [r.get("history") or () for r in rows],
    )
    return [None if isinstance(o, Exception) else o.score for o in out]


def interleaved(verifiers: dict, rows: list[dict], block: int) -> tuple[dict, dict, list[dict]]:
    """Scores and seconds of every variant over `rows`, block by block, taking turns."""
    names = list(verifiers)
    scores = {n: [] for n in names}
    seconds = dict.fromkeys(names, 0.0)
    per_block = []
    for b, start in enumerate(range(0, len(rows), block)):
        chunk = rows[start : start + block]
        turn = names[b % len(names) :] + names[: b % len(names)]
        took = {}
        for n in turn:
            t0 = time.perf_counter()
            s = score(verifiers[n], chunk)
            took[n] = time.perf_counter() - t0
            seconds[n] += took[n]
            scores[n].extend(s)
        per_block.append(took)
    return scores, seconds, per_block


def compare(scores: dict, labels: list[int], subset: list[int] | None = None) -> dict:
    """Per variant: AUROC, its difference from float's, max |score diff| and verdicts changed at 0.5."""
    from verirag.metrics.calibration import auroc

    idx = [i for i in subset or range(len(labels)) if all(scores[n][i] is not None for n in scores)]
    y = [labels[i] for i in idx]
    f = np.array([scores["float"][i] for i in idx])
    out = {}
    for n, s in scores.items():
        s = np.array([s[i] for i in idx])
        out[n] = {
            "n": len(idx),
            "auroc": float(auroc(s, y)),
            "auroc_minus_float": float(auroc(s, y) - auroc(f, y)),
            "max_abs_diff": float(np.abs(s - f).max()),
            "mean_abs_diff": float(np.abs(s - f).mean()),
            "verdicts_changed": int(((s >= 0.5) != (f >= 0.5)).sum()),
        }
    return out


def memory_arm(name: str, log: Path, threads: int) -> dict:
    """In this process: build variant `name`, score the first MEMORY_ROWS rows; the peak RSS."""
    import torch

    torch.set_num_threads(threads)
    rows = [json.loads(x) for x in log.read_text(encoding="utf-8").splitlines()][:MEMORY_ROWS]
    with tempfile.TemporaryDirectory() as tmp:
        v = build(name, Path(tmp), threads)
        built = _vmhwm_mb()
        score(v, rows)
    return {"variant": name, "peak_after_build_mb": built, "peak_mb": _vmhwm_mb()}


def _print_accuracy(title: str, table: dict) -> None:
    print(title)
    print(f"  {'variant':<19}{'n':>5}{'AUROC':>9}{'- float':>10}{'max |d|':>10}{'mean |d|':>10}{'changed@0.5':>13}")
    for n, r in table.items():
        print(
            f"  {n:<19}{r['n']:>5}{r['auroc']:>9.4f}{r['auroc_minus_float']:>+10.4f}{r['max_abs_diff']:>10.4f}"
            f"{r['mean_abs_diff']:>10.4f}{r['verdicts_changed']:>13}"
        )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--answers", type=int, default=400)
    ap.add_argument("--block", type=int, default=20, help="answers per turn of the interleaving")
    ap.add_argument("--threads", type=int, default=2, help="torch (and ONNX Runtime) threads")
    ap.add_argument("--variants", default=",".join(VARIANTS))
    ap.add_argument("--alone", type=int, default=20, help="answers also scored one at a time")
    ap.add_argument("--dev", action="store_true", help="also score the dev set with every variant")
    ap.add_argument("--no-memory", action="store_true")
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--json", type=Path, help="also write every number (and the scores) here")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(args.threads)
    names = available(args.variants.split(","))
    if names[0] != "float":
        raise SystemExit("the first variant must be float (the baseline)")
    if not (args.data / "lost_in_the_middle_nq").is_dir():
        raise SystemExit(f"no benchmark data at {args.data} (--data, VERIRAG_DATA_DIR)")
    rows = build_log(args.data, args.answers)
    report: dict = {"threads": args.threads, "answers": len(rows), "block": args.block}
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        verifiers = {n: build(n, tmp, args.threads) for n in names}
        for v in verifiers.values():
            score(v, rows[:4])  # warm up
        scores, seconds, per_block = interleaved(verifiers, rows, args.block)
        print(f"log: {len(rows)} answers, blocks of {args.block}, taking turns; {args.threads} threads")
        print(f"  {'variant':<19}{'seconds':>9}{'answers/s':>11}{'x float':>9}{'median block x':>16}")
        for n in names:
            ratios = [b["float"] / b[n] for b in per_block]
            print(
                f"  {n:<19}{seconds[n]:>9.1f}{len(rows) / seconds[n]:>11.2f}{seconds['float'] / seconds[n]:>9.2f}"
                f"{float(np.median(ratios)):>16.2f}"
            )
        report["seconds"], report["per_block"] = seconds, per_block
        report["log"] = compare(scores, [r["label"] for r in rows])
        _print_accuracy("scores on the log, against float:", report["log"])
        if args.alone:
            report["alone_vs_batched"] = {}
            for n in names:
                alone = [score(verifiers[n], [r])[0] for r in rows[: args.alone]]
                d = _max_diff(alone, scores[n][: args.alone])
                report["alone_vs_batched"][n] = d
            print(
                f"max |score alone - score batched| over {args.alone} answers: "
                + ", ".join(f"{n} {d:.2e}" for n, d in report["alone_vs_batched"].items())
            )
        if args.dev:
            sys.path.insert(0, str(ROOT / "benchmarks"))
            from verifier_dev import dev_rows

            dev = dev_rows(args.data)
            dscores, dseconds, _ = interleaved(verifiers, dev, 50)
            labels = [r["label"] for r in dev]
            report["dev_seconds"] = dseconds
            for ds in ("hotpot_qa", "topiocqa"):
                subset = [i for i, r in enumerate(dev) if r["id"].startswith(ds + ":")]
                report[f"dev_{ds}"] = compare(dscores, labels, subset)
                _print_accuracy(f"dev set, {ds}{' (with its history)' * (ds == 'topiocqa')}:", report[f"dev_{ds}"])
            print("  dev seconds: " + ", ".join(f"{n} {dseconds[n]:.0f}" for n in names))
            report["dev_scores"] = {"ids": [r["id"] for r in dev], **dscores}
        if not args.no_memory:
            log = tmp / "log.jsonl"
            log.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
            print(f"peak RSS, each variant in its own process (load, build, score {MEMORY_ROWS} answers):")
            report["memory"] = {}
            for n in names:
                cmd = [sys.executable, __file__, "_memory", n, str(log), str(args.threads)]
                out = subprocess.run(cmd, capture_output=True, text=True, check=False)
                if out.returncode != 0:
                    raise SystemExit(f"memory arm {n} failed:\n{out.stderr[-3000:]}")
                m = json.loads(out.stdout.strip().splitlines()[-1])
                report["memory"][n] = m
                print(f"  {n:<19}after build {m['peak_after_build_mb']:>6.0f} MB, peak {m['peak_mb']:>6.0f} MB")
    if args.json:
        args.json.write_text(json.dumps(report, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "_memory":
        print(json.dumps(memory_arm(sys.argv[2], Path(sys.argv[3]), int(sys.argv[4]))))
        sys.exit(0)
    sys.exit(main())
