"""The stacked verifier shipped in the package (`make stack`: the shipped verifier's score beside the
default model's token log-probabilities, fitted on the distillation's answers): `vanilla+stacked`
reads it when no stack is named, it belongs to the shipped verifier, and another model is refused."""

from __future__ import annotations

import pytest

from verirag.errors import InputError
from verirag.learned import stack as stack_module
from verirag.learned.stack import StackedVerifier, shipped_stack_path


def test_the_shipped_stack_belongs_to_the_shipped_verifier():
    """A verifier retrained without `make stack` would leave a stack whose verifier feature means
    something else: the stacked predictor refuses it at build time, so CI must catch it first."""
    from verirag.awf.compose import build_predictor

    stack = StackedVerifier.load(shipped_stack_path())
    assert "verifier" in stack.features and "logprob_mean" in stack.features
    source = stack.sources["verifier"]
    assert source["digest"] == build_predictor(source["predictor"], None, options=source.get("options") or {}).digest


@pytest.mark.slow
def test_another_model_is_refused_by_the_shipped_stack(smollm):
    from verirag.awf.compose import build_predictor

    with pytest.raises(InputError, match="fitted for model"):
        build_predictor("stacked", smollm)


def test_an_installation_without_the_stack_names_the_command(monkeypatch, tmp_path):
    monkeypatch.setattr(stack_module, "SHIPPED_STACK", tmp_path / "stack.json")
    with pytest.raises(InputError, match="verirag train stack"):
        shipped_stack_path()
