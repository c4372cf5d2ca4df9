"""The learned parts' shared loss and early stopping (verirag.learned.training), against torch's and
scikit-learn's binary cross-entropy as references."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from sklearn.metrics import log_loss

from verirag.learned.training import EarlyStopping, bce_with_logits


def _sample(n=200, seed=0):
    rng = np.random.default_rng(seed)
    return rng.normal(0, 3, n), rng.integers(0, 2, n).astype(float)


def test_numpy_bce_matches_torch_and_sklearn():
    z, y = _sample()
    ours = bce_with_logits(z, y)
    assert isinstance(ours, float)
    ref_torch = torch.nn.functional.binary_cross_entropy_with_logits(torch.tensor(z), torch.tensor(y)).item()
    assert ours == pytest.approx(ref_torch, rel=1e-12)
    assert ours == pytest.approx(log_loss(y, 1 / (1 + np.exp(-z)), labels=[0, 1]), rel=1e-9)
    # soft labels: torch takes them too
    soft = np.linspace(0, 1, len(z))
    ref_soft = torch.nn.functional.binary_cross_entropy_with_logits(torch.tensor(z), torch.tensor(soft)).item()
    assert bce_with_logits(z, soft) == pytest.approx(ref_soft, rel=1e-12)


def test_numpy_bce_is_stable_at_extreme_logits():
    z, y = np.array([800.0, -800.0, 800.0, -800.0]), np.array([1.0, 0.0, 0.0, 1.0])
    assert bce_with_logits(z, y) == pytest.approx((0 + 0 + 800 + 800) / 4)  # no overflow, no log(0)
    assert bce_with_logits(np.zeros(0), np.zeros(0)) == math.inf  # nothing to validate never looks best
    with pytest.raises(ValueError, match="shape"):
        bce_with_logits(np.zeros(3), np.zeros(2))


def test_torch_bce_is_torchs_own_and_differentiable():
    z, y = _sample(32, seed=1)
    logits = torch.tensor(z, dtype=torch.float32, requires_grad=True)
    ours = bce_with_logits(logits, y)  # labels as numpy, cast to the logits' dtype
    ref = torch.nn.functional.binary_cross_entropy_with_logits(logits, torch.tensor(y, dtype=torch.float32))
    assert ours.dtype == torch.float32 and torch.equal(ours, ref)
    ours.backward()
    assert logits.grad is not None and torch.isfinite(logits.grad).all()
    one = torch.tensor(0.3, requires_grad=True)  # one answer's logit against a float label
    assert bce_with_logits(one, 1.0).item() == pytest.approx(math.log1p(math.exp(-0.3)))


def test_early_stopping_keeps_the_best_epoch_and_stops_after_patience():
    stop = EarlyStopping(patience=2, min_delta=1e-6)
    taken = []

    def state(e):
        return lambda: taken.append(e) or f"weights of epoch {e}"

    losses = {1: 0.9, 2: 0.5, 3: 0.5 - 1e-7, 4: 0.7}  # epoch 3 is no better by more than min_delta
    said = [stop.update(e, loss, state(e), {"epoch": e}) for e, loss in losses.items()]
    assert said == [False, False, False, True]
    assert (stop.best_epoch, stop.best_loss, stop.best_state) == (2, 0.5, "weights of epoch 2")
    assert taken == [1, 2]  # the state is copied only when kept
    assert [h["epoch"] for h in stop.history] == [1, 2, 3, 4] and stop.waited == 2


def test_early_stopping_resets_patience_on_improvement():
    stop = EarlyStopping(patience=2)
    said = [stop.update(e, loss, lambda: None) for e, loss in enumerate([1.0, 1.1, 0.8, 0.9, 0.95], 1)]
    assert said == [False, False, False, False, True] and stop.best_epoch == 3


def test_a_diverged_fit_keeps_nothing():
    stop = EarlyStopping(patience=3)
    for e, loss in enumerate([math.nan, math.inf, math.nan], 1):
        stop.update(e, loss, lambda: "weights")
    assert stop.best_state is None and stop.best_epoch is None


def test_tuple_losses_compare_in_order():
    # (-AUROC, loss): a higher AUROC wins; on a tie, the lower loss; the first epoch is kept even
    # with a NaN tie-breaker
    stop = EarlyStopping(patience=5)
    for e, loss in enumerate([(-0.6, math.nan), (-0.7, 0.9), (-0.7, 0.8), (-0.7, 0.85), (-0.65, 0.1)], 1):
        stop.update(e, loss, lambda e=e: e)
    assert stop.best_epoch == stop.best_state == 3 and stop.best_loss == (-0.7, 0.8)
