"""benchmarks/bench_verifier_int8.py compares int8 variants against the float verifier: its float
baseline must be the shipped verifier's own function once the merged LoRA wrappers are dropped, and its
torch variants must really hold int8 linear maps (issue 50; the figures: docs/results/verifier.md)."""

from __future__ import annotations

import copy
import importlib.util
from pathlib import Path

import pytest
from test_verifier_shipped import HELD_OUT, assert_shipped

from verirag.learned.shipped import VERIFIER_ENV, shipped_verifier_dir
from verirag.learned.verifier import TrainedVerifier
from verirag.learned.verifier_model import sorted_pair_logits


@pytest.fixture(scope="module")
def bench():
    path = Path(__file__).resolve().parents[1] / "benchmarks" / "bench_verifier_int8.py"
    spec = importlib.util.spec_from_file_location("bench_verifier_int8", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_variants_are_the_shipped_function_and_int8(bench, monkeypatch):
    import torch
    from peft.tuners.lora.layer import LoraLayer
    from torch.ao.nn.quantized.dynamic import Linear as Int8Linear

    monkeypatch.delenv(VERIFIER_ENV, raising=False)
    assert_shipped()
    v = TrainedVerifier.load(shipped_verifier_dir())
    question, passages, supported, unsupported = HELD_OUT[0]
    claims = [f"{question} {supported}", f"{question} {unsupported}"]
    chunks = [passages[0], passages[0]]

    def logits(scorer):
        return sorted_pair_logits(scorer, v._tokenizer, claims, chunks, v.read_window, v.batch_tokens)

    assert any(isinstance(m, LoraLayer) for m in v._scorer.modules())  # the shipped adapter is LoRA-shaped
    plain = copy.deepcopy(v._scorer)
    bench.drop_merged_lora(plain)
    assert not any(isinstance(m, LoraLayer) for m in plain.modules())
    assert torch.allclose(logits(plain), logits(v._scorer), atol=1e-5)  # the same function
    int8 = bench.torch_int8(plain, per_channel=True)
    # per layer query, key, value and 3 dense maps; and the pooler's
    assert sum(isinstance(m, Int8Linear) for m in int8.encoder.modules()) == 6 * 6 + 1
    z = logits(int8)
    assert torch.isfinite(z).all() and not torch.equal(z, logits(v._scorer))
