"""What the learned parts' fit loops share: the loss and early stopping.

bce_with_logits(z, y)                      # mean binary cross-entropy, from the logits
stop = EarlyStopping(patience=1, min_delta=1e-6)
for epoch in range(1, epochs + 1):
    ...train one epoch...
    if stop.update(epoch, val_loss, lambda: copy.deepcopy(model.state_dict()), entry):
        break
model.load_state_dict(stop.best_state)     # stop.best_epoch, stop.best_loss, stop.history
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from typing import Any

import numpy as np


def _is_tensor(x: Any) -> bool:
    torch = sys.modules.get("torch")  # a numpy caller never imports torch through here
    return torch is not None and isinstance(x, torch.Tensor)


def bce_with_logits(logits: Any, labels: Any) -> Any:
    """Mean binary cross-entropy of sigmoid(z) against labels y in [0, 1], from the logits z:

        BCE = mean( y log(1 + e^-z) + (1 - y) log(1 + e^z) )

    computed without overflow. numpy input gives a float (infinity for no labels, so an empty
    validation set never looks best); a torch tensor gives a differentiable tensor (torch's own
    binary_cross_entropy_with_logits, the labels cast to the logits' dtype and device)."""
    if _is_tensor(logits):
        import torch

        target = torch.as_tensor(labels, dtype=logits.dtype, device=logits.device)
        return torch.nn.functional.binary_cross_entropy_with_logits(logits, target)
    z = np.asarray(logits, dtype=np.float64)
    y = np.asarray(labels, dtype=np.float64)
    if z.shape != y.shape:
        raise ValueError(f"logits of shape {z.shape} but labels of shape {y.shape}")
    if not y.size:
        return math.inf
    return float(np.mean(np.logaddexp(0.0, -z) * y + np.logaddexp(0.0, z) * (1 - y)))


Loss = float | tuple[float, ...]


class EarlyStopping:
    """Keeps a fit's best epoch by its validation loss and says when to stop.

    The loss is a float, or a tuple compared in order (a primary loss, then tie-breakers). An
    epoch improves when its loss is below the best so far, a float by more than `min_delta`; the
    first epoch improves unless its (primary) loss is NaN or infinite, so a diverged fit keeps
    nothing. After `patience` epochs in a row without improvement, `update` says stop.

    Attributes: `best_loss`, `best_epoch` (None until an epoch improves), `best_state` (what
    `state()` returned at the best epoch), `waited` (epochs since), `history` (the entries given).
    """

    def __init__(self, patience: int = 1, min_delta: float = 0.0):
        if min_delta < 0:
            raise ValueError(f"min_delta must be 0 or more, got {min_delta}")
        self.patience, self.min_delta = patience, min_delta
        self.best_loss: Loss | None = None
        self.best_epoch: int | None = None
        self.best_state: Any = None
        self.waited = 0
        self.history: list[dict[str, Any]] = []

    def improves(self, loss: Loss) -> bool:
        if self.best_loss is None:
            primary = loss[0] if isinstance(loss, tuple) else loss
            return primary < math.inf  # False for NaN too
        if isinstance(loss, tuple):
            return loss < self.best_loss
        return loss < self.best_loss - self.min_delta

    def update(self, epoch: int, loss: Loss, state: Callable[[], Any], entry: dict[str, Any] | None = None) -> bool:
        """Record the epoch (`entry` into `history`); keep `state()` (called only then) when it
        improves. True: stop now."""
        if entry is not None:
            self.history.append(entry)
        if self.improves(loss):
            self.best_loss, self.best_epoch, self.waited = loss, epoch, 0
            self.best_state = state()
            return False
        self.waited += 1
        return self.waited >= self.patience
