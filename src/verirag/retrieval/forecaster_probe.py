"""The frozen-features forecaster: a logistic head over the LLM's own hidden state of concat[q, d]
(the "probe" family of CalibRAG's baselines, e.g. CT-probe; Jang et al., section 4).

Same construct / fit / predict shape and fitted attributes as `Forecaster` (the cross-encoder),
but nothing of the model is trained: the features are the mean-pooled last-layer hidden state
that the llama.cpp or transformers backend gives (`LLM.hidden_state`, request-cached), scaled
to zero mean and unit variance, and scikit-learn's LogisticRegression (unweighted, like the cross-encoder's
loss) reads them. Unlike CT-probe, which reads (question, the model's answer), it reads (q, d),
the forecaster's own input, with CalibRAG's labels.

Saved as one JSON file in the forecaster's folder (`forecaster.json`: scaler, coefficients,
temperature, the LLM's fingerprint); loading it with another LLM is an InputError, since the
features would mean something else.
"""
from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from verirag.errors import InputError
from verirag.jsonio import write_json
from verirag.retrieval.forecaster import (FORMAT, META_FILE, _check_pairs, _sigmoid, data_fingerprint,
                                          fit_temperature, training_split, validation_metrics)


def probe_text(query: str, document: str) -> str:
    return f"Question: {query}\nDocument: {document}"


class ProbeForecaster:
    """f(q, d) = sigmoid((w . standardised h(q, d) + b) / T), h the LLM's hidden state. `llm` needs
    the hidden_state capability; `C` is the inverse L2 strength of the logistic regression."""

    kind = "probe"

    def __init__(self, llm, *, C: float = 0.1, val_share: float = 0.2, temperature: bool = True, seed: int = 0,
                 max_iter: int = 2000):
        llm.require("hidden_state")
        self.llm, self.C, self.val_share, self.temperature, self.seed = llm, C, val_share, temperature, seed
        self.max_iter = max_iter
        self.mean_ = self.scale_ = self.coef_ = None
        self.intercept_ = 0.0
        self.temperature_ = 1.0
        self.best_epoch_: int | None = None   # 1 once fitted (one closed fit; kept for the shared shape)
        self.history_: list[dict[str, float]] = []
        self.metrics_: dict[str, float] = {}
        self.n_train_ = self.n_val_ = 0
        self.label_balance_ = float("nan")
        self.data_fingerprint_ = ""
        self.meta: dict[str, Any] = {}

    @property
    def encoder(self) -> str:
        return f"llm:{self.llm.fingerprint}"

    @property
    def fitted(self) -> bool:
        return self.coef_ is not None

    def features(self, queries: Sequence[str], documents: Sequence[str],
                 progress: Callable[[int, int], None] | None = None) -> np.ndarray:
        queries, documents = _check_pairs(queries, documents)
        rows = []
        for i, (q, d) in enumerate(zip(queries, documents)):
            rows.append(np.asarray(self.llm.hidden_state(probe_text(q, d)), dtype=np.float64))
            if progress:
                progress(i + 1, len(queries))
        return np.vstack(rows) if rows else np.zeros((0, 0))

    def _logits(self, x: np.ndarray) -> np.ndarray:
        return ((x - self.mean_) / self.scale_) @ self.coef_ + self.intercept_

    def logits(self, queries: Sequence[str], documents: Sequence[str]) -> np.ndarray:
        if not self.fitted:
            raise InputError("the probe is not fitted")
        x = self.features(queries, documents)
        return self._logits(x) if len(x) else np.zeros(0)

    def predict_proba(self, queries: Sequence[str], documents: Sequence[str]) -> np.ndarray:
        return _sigmoid(self.logits(queries, documents) / self.temperature_)

    def fit(self, queries: Sequence[str], documents: Sequence[str], labels: Sequence[int], groups: Sequence[str],
            *, val_groups: Sequence[str] | None = None,
            progress: Callable[[int, int], None] | None = None) -> "ProbeForecaster":
        from sklearn.linear_model import LogisticRegression
        queries, documents = _check_pairs(queries, documents)
        y, tr, va = training_split(labels, groups, len(queries), val_groups, self.val_share, self.seed)
        x = self.features(queries, documents, progress)
        self.mean_ = x[tr].mean(axis=0)
        self.scale_ = np.where(x[tr].std(axis=0) > 1e-8, x[tr].std(axis=0), 1.0)
        clf = LogisticRegression(C=self.C, max_iter=self.max_iter)
        clf.fit((x[tr] - self.mean_) / self.scale_, y[tr])
        self.coef_, self.intercept_ = clf.coef_[0].astype(np.float64), float(clf.intercept_[0])
        self.n_train_, self.n_val_ = len(tr), len(va)
        self.label_balance_ = float(y[tr].mean())
        self.data_fingerprint_ = data_fingerprint(queries, documents, y)
        z = self._logits(x[va])
        self.temperature_ = fit_temperature(z, y[va]) if self.temperature else 1.0
        self.metrics_ = validation_metrics(_sigmoid(z / self.temperature_), y[va])
        self.best_epoch_ = 1
        self.history_ = [{"epoch": 1, "train_loss": float("nan"), "val_nll": self.metrics_["nll"]}]
        return self

    def save(self, directory: str | Path) -> Path:
        if not self.fitted:
            raise InputError("the forecaster is not fitted: call fit() first")
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        meta = {"format": FORMAT, "kind": self.kind, "encoder": self.encoder, "llm_model": self.llm.model_id,
                "settings": {"C": self.C, "val_share": self.val_share, "temperature": self.temperature,
                             "seed": self.seed, "max_iter": self.max_iter},
                "mean_": self.mean_.tolist(), "scale_": self.scale_.tolist(), "coef_": self.coef_.tolist(),
                "intercept_": self.intercept_, "temperature_": self.temperature_, "history_": self.history_,
                "best_epoch_": self.best_epoch_, "metrics_": self.metrics_, "n_train_": self.n_train_,
                "n_val_": self.n_val_, "label_balance_": self.label_balance_,
                "data_fingerprint_": self.data_fingerprint_, "meta": self.meta}
        write_json(directory / META_FILE, meta, indent=None)
        return directory

    @classmethod
    def load(cls, directory: str | Path, llm) -> "ProbeForecaster":
        """Load with the LLM whose hidden states it was trained on; another model (other weights)
        is an InputError."""
        meta = json.loads((Path(directory) / META_FILE).read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT or meta.get("kind") != cls.kind:
            raise InputError(f"{directory}: not a probe forecaster of format {FORMAT}")
        if llm is None:
            raise InputError(f"{directory} is a probe over {meta.get('llm_model')}'s hidden states: it needs that model")
        if meta["encoder"] != f"llm:{llm.fingerprint}":
            raise InputError(f"{directory}: trained on the hidden states of {meta.get('llm_model')} "
                             f"({meta['encoder']}), not of {llm.model_id} (llm:{llm.fingerprint}); train a probe "
                             "for this model (`verirag train forecaster --kind probe --model ...`)")
        s = meta["settings"]
        f = cls(llm, C=s["C"], val_share=s["val_share"], temperature=s["temperature"], seed=s["seed"],
                max_iter=s["max_iter"])
        for name in ("mean_", "scale_", "coef_"):
            setattr(f, name, np.asarray(meta[name], dtype=np.float64))
        for name in ("intercept_", "temperature_", "history_", "best_epoch_", "metrics_", "n_train_", "n_val_",
                     "label_balance_", "data_fingerprint_"):
            setattr(f, name, meta[name])
        f.meta = meta.get("meta") or {}
        return f
