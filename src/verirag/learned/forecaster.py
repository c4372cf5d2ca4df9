"""CalibRAG's forecasting function f(q, d) (Jang et al., section 3.2): the probability that a
decision built on the answer generated from document d is correct. Two kinds, one shape:

- `Forecaster`, the paper's shape sized for a CPU: a pre-trained encoder reads concat[q, d] (a
  cross-encoder), a linear head gives one logit, a sigmoid turns it into a probability, and
  binary cross-entropy trains it. The default encoder is the packaged all-MiniLM-L6-v2 with a
  fresh classification head (sentence-transformers' CrossEncoder), which fine-tunes on 2 cores
  in minutes.
- `ProbeForecaster`, the frozen-features baseline (the "probe" family of CalibRAG's baselines,
  e.g. CT-probe; section 4): a logistic head over the LLM's own mean-pooled last-layer hidden
  state of concat[q, d] (`LLM.hidden_state`, request-cached), standardised; nothing of the model
  is trained. Unlike CT-probe, which reads (question, the model's answer), it reads (q, d), with
  CalibRAG's labels.

construct / fit / predict (`verirag.learned.base`):

    f = Forecaster().fit(queries, documents, labels, groups)   # groups: one id per question
    f.predict_proba(["who wrote ...?"], ["Hamlet is a tragedy by ..."])
    f.score_passages("who wrote ...?", passages)                # f(q, d) of each passage

Fitted state of both: `temperature_` (post-hoc temperature of the logit, 1.0 without scaling),
`metrics_` (AUROC, ECE, Brier, NLL on the validation questions), `n_train_`, `n_val_`,
`label_balance_` (share of positives in training); the cross-encoder's training also leaves
`history_` (per epoch: training loss, validation NLL) and `best_epoch_`; the probe's `mean_`,
`scale_`, `coef_`, `intercept_`. Fingerprints: "data" (the labelled pairs), "model" (the RAG
model whose answers were labelled; for the probe, the LLM whose hidden states it reads),
"encoder" (the cross-encoder's base), and what the trainer adds (retriever, corpus).

Validation holds out whole questions (`groups`), never another document of a training question:
a question's documents share its wording, so a split by pair would leak it. Saved as a folder:
`forecaster.json` (settings, fitted state, fingerprints) and, for the cross-encoder, the encoder
(safetensors + its JSON config and tokenizer files, sentence-transformers' layout); nothing is
pickled. A probe loaded with another LLM is refused (its features would mean something else), a
cross-encoder loaded for another encoder too; a cross-encoder used with another RAG model than
the one it was labelled with warns (it forecasts that model's correctness).
"""

from __future__ import annotations

import copy
import hashlib
import json
import math
import random
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from verirag.errors import InputError, ModelNotFoundError
from verirag.learned.base import LearnedPart
from verirag.learned.calibration import fit_temperature, validation_metrics
from verirag.learned.splits import split_by_group
from verirag.learned.training import EarlyStopping, bce_with_logits
from verirag.metrics.calibration import sigmoid
from verirag.models.hashing import sha256_file

FORMAT_V1 = "verirag-forecaster/1"  # both kinds before the shared contract
META_FILE = "forecaster.json"
ENCODER_DIR = "encoder"
DEFAULT_ENCODER = "all-MiniLM-L6-v2"


def pair_text(title: str, text: str) -> str:
    """How a document is written into the pair (the title helps short passages)."""
    title, text = (title or "").strip(), (text or "").strip()
    return f"{title}: {text}" if title else text


def probe_text(query: str, document: str) -> str:
    return f"Question: {query}\nDocument: {document}"


def data_fingerprint(queries: Sequence[str], documents: Sequence[str], labels: Sequence[int]) -> str:
    h = hashlib.sha256()
    for q, d, y in zip(queries, documents, labels):
        h.update(json.dumps([q, d, int(y)], ensure_ascii=False).encode())
    return h.hexdigest()[:16]


def training_split(
    labels: Sequence[int],
    groups: Sequence[str],
    n_pairs: int,
    val_groups: Sequence[str] | None,
    val_share: float,
    seed: int,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(labels as 0/1 array, training indices, validation indices) after the checks every
    forecaster's `fit` needs: one label and group per pair, both classes, and both classes among
    the training questions. The validation questions are `val_groups`, or about `val_share` of
    the groups (at least one, never all) drawn by `split_by_group` with `seed`."""
    y = np.asarray([int(v) for v in labels])
    if len(y) != n_pairs or len(groups) != n_pairs:
        raise InputError("queries, documents, labels and groups must have one entry per pair")
    if not len(y):
        raise InputError("no training pairs")
    if not np.isin(y, (0, 1)).all():
        raise InputError("labels must be 0 or 1")
    if y.min() == y.max():
        raise InputError(
            f"every training label is {int(y[0])}: a forecaster needs both correct and "
            "incorrect decisions to learn from (more questions, or another labelling mode)"
        )
    if val_groups is not None:
        held = set(val_groups)
        val = np.array([g in held for g in groups])
        train = ~val
        if not val.any() or not train.any():
            raise InputError("the validation groups must hold some questions, but not all")
    else:
        if not 0.0 < val_share < 1.0:
            raise InputError(f"the validation share must be in (0, 1), got {val_share}")
        n_groups = len(set(groups))
        if n_groups < 2:
            raise InputError("validation holds out whole questions: the data needs at least two questions")
        train, val = split_by_group(
            list(groups), seed=seed, count=min(n_groups - 1, max(1, round(val_share * n_groups)))
        )
    tr, va = np.flatnonzero(train), np.flatnonzero(val)
    if len(set(y[tr])) < 2:
        raise InputError(
            "the training questions hold one class only (the other is all in the validation "
            "questions): label more questions"
        )
    return y, tr, va


def _encoder_path(name: str) -> str:
    from verirag.models import resolve_embedder_path

    return str(resolve_embedder_path(name))


def _load_cross_encoder(path: str, max_length: int, device: str | None):
    """A sentence-transformers CrossEncoder with one output logit; a bi-encoder checkpoint (the
    packaged MiniLM) gets a freshly initialised head."""
    try:
        from sentence_transformers import CrossEncoder
        from transformers.utils import logging as hf_logging
    except ImportError as e:
        raise ModelNotFoundError("the forecaster needs sentence-transformers and torch") from e
    import logging

    from verirag.retrieval.embedder import default_device

    level = hf_logging.get_verbosity()
    st_logger = logging.getLogger("sentence_transformers")
    st_level = st_logger.level
    # "head newly initialised" and "converting a SentenceTransformer to a CrossEncoder" are the
    # point here, not news
    hf_logging.set_verbosity_error()
    st_logger.setLevel(logging.ERROR)  # the conversion notice is a warning
    hf_logging.disable_progress_bar()
    try:
        return CrossEncoder(path, num_labels=1, max_length=max_length, device=device or default_device())
    except (OSError, ValueError) as e:
        raise ModelNotFoundError(f"cannot load the forecaster's encoder {path!r} ({type(e).__name__}: {e})") from e
    finally:
        hf_logging.set_verbosity(level)
        st_logger.setLevel(st_level)


class ForecasterBase(LearnedPart):
    """What both forecasters share: f = sigmoid(logit / temperature_), the validation split, the
    temperature and metrics, scoring passages, the saved folder."""

    kind: str
    title = "forecaster"
    folder = META_FILE
    fit_command = "verirag train forecaster DATA --out DIR"
    v1_state: tuple[str, ...] = ("temperature_", "metrics_", "n_train_", "n_val_", "label_balance_")

    def logits(self, queries: Sequence[str], documents: Sequence[str]) -> np.ndarray:
        raise NotImplementedError

    def predict_proba(self, queries: Sequence[str], documents: Sequence[str]) -> np.ndarray:
        """f(q, d) in [0, 1] per pair: sigmoid(logit / temperature_)."""
        self.check_fitted()
        return sigmoid(self.logits(queries, documents) / self.temperature_)

    def score_passages(self, question: str, passages: Sequence[Any]) -> list[float]:
        """f(question, d) of each passage (`pair_text` of its title and text); a passage without
        text cannot help and scores 0."""
        texts = [pair_text(p.title, p.text) for p in passages]
        idx = [i for i, t in enumerate(texts) if t.strip()]
        out = [0.0] * len(texts)
        if idx:
            for i, p in zip(idx, self.predict_proba([question] * len(idx), [texts[i] for i in idx])):
                out[i] = float(p)
        return out

    def _split(self, queries, documents, labels, groups, val_groups):
        """Checked pairs, labels and the (train, validation) indices; records the split's sizes."""
        queries, documents = _check_pairs(queries, documents)
        y, tr, va = training_split(labels, groups, len(queries), val_groups, self.val_share, self.seed)
        self.n_train_, self.n_val_ = len(tr), len(va)
        self.label_balance_ = float(y[tr].mean())
        self.fingerprints["data"] = data_fingerprint(queries, documents, y)
        return queries, documents, y, tr, va

    def _calibrate(self, val_logits: np.ndarray, val_labels: np.ndarray) -> None:
        self.temperature_ = fit_temperature(val_logits, val_labels) if self.temperature else 1.0
        self.metrics_ = validation_metrics(sigmoid(val_logits / self.temperature_), val_labels)

    @classmethod
    def upgrade(cls, d: dict[str, Any], path: Path) -> dict[str, Any]:
        """A forecaster of the first format ("verirag-forecaster/1", either kind)."""
        if d.get("format") != FORMAT_V1 or d.get("kind") != cls.kind:
            return super().upgrade(d, path)
        meta = dict(d.get("meta") or {})
        if cls.kind == "probe":
            fingerprints = {"model": d["encoder"].removeprefix("llm:")}
            meta["llm_model"] = d.get("llm_model")
        else:
            fingerprints = {
                "encoder": d["encoder"],
                "model": meta.get("model_fingerprint"),
                "retriever": meta.get("retriever"),
                "corpus": meta.get("corpus"),
            }
            d = {**d, "settings": {"encoder": d["encoder"], **d["settings"]}, "weights_sha256_": d["weights_sha256"]}
        return {
            "settings": d["settings"],
            "state": {k: d[k] for k in cls.v1_state},
            "provenance": meta,
            "fingerprints": {**fingerprints, "data": d.get("data_fingerprint_")},
        }


class Forecaster(ForecasterBase):
    """f(q, d) as a cross-encoder. Settings: `encoder` (a sentence-transformers or HF folder, or
    the packaged default), `max_length` (tokens of the pair), `epochs` (at most), `batch_size`,
    `learning_rate`, `patience` (stop after this many epochs without a better validation NLL),
    `val_share` (questions held out when `fit` is given no validation groups), `temperature`
    (fit a temperature on the validation split), `seed`."""

    kind = "cross_encoder"
    format_name = "forecaster"
    fitted_attribute = "best_epoch_"
    refuse_on = ("encoder",)
    warn_on = ("model", "corpus")
    runtime = ("fingerprints", "device")
    v1_state = ForecasterBase.v1_state + ("history_", "best_epoch_", "weights_sha256_")

    def __init__(
        self,
        encoder: str = DEFAULT_ENCODER,
        *,
        max_length: int = 256,
        epochs: int = 3,
        batch_size: int = 16,
        learning_rate: float = 3e-5,
        patience: int = 1,
        val_share: float = 0.2,
        temperature: bool = True,
        seed: int = 0,
        device: str | None = None,
        fingerprints: dict[str, Any] | None = None,
    ):
        super().__init__({"encoder": encoder, **(fingerprints or {})})
        if epochs < 1 or batch_size < 1 or max_length < 8:
            raise InputError("epochs and batch_size must be >= 1 and max_length >= 8")
        self.encoder, self.max_length, self.epochs = encoder, max_length, epochs
        self.batch_size, self.learning_rate, self.patience = batch_size, learning_rate, patience
        self.val_share, self.temperature, self.seed, self.device = val_share, temperature, seed, device
        self._model = None

    @property
    def model(self):
        if self._model is None:
            self._model = _load_cross_encoder(_encoder_path(self.encoder), self.max_length, self.device)
        return self._model

    def _batches(self, queries, documents, order: Sequence[int]):
        ce = self.model
        for start in range(0, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            enc = ce.tokenizer(
                [queries[i] for i in idx],
                [documents[i] for i in idx],
                padding=True,
                truncation="longest_first",
                max_length=self.max_length,
                return_tensors="pt",
            )
            yield idx, enc.to(ce.model.device)

    def logits(self, queries: Sequence[str], documents: Sequence[str]) -> np.ndarray:
        """The encoder's raw logit per (query, document) pair (before the temperature)."""
        import torch

        queries, documents = _check_pairs(queries, documents)
        if not queries:
            return np.zeros(0)
        out = np.zeros(len(queries))
        self.model.model.eval()
        with torch.inference_mode():
            for idx, enc in self._batches(queries, documents, list(range(len(queries)))):
                out[idx] = self.model.model(**enc).logits[:, 0].float().cpu().numpy()
        return out

    def fit(
        self,
        queries: Sequence[str],
        documents: Sequence[str],
        labels: Sequence[int],
        groups: Sequence[str],
        *,
        val_groups: Sequence[str] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> Forecaster:
        """Fine-tune on (query, document, label) pairs. `groups` names each pair's question; the
        validation split holds out whole questions (`val_groups`, or `val_share` of them drawn
        with `seed`). Early stopping keeps the epoch with the lowest validation NLL. `progress`
        is told (steps done, steps in all) after each optimiser step."""
        import torch

        queries, documents, y, tr, va = self._split(queries, documents, labels, groups, val_groups)
        self.best_epoch_ = None
        torch.manual_seed(self.seed)
        rng = random.Random(self.seed)
        model = self.model.model
        opt = torch.optim.AdamW(model.parameters(), lr=self.learning_rate, weight_decay=0.01)
        steps_per_epoch = math.ceil(len(tr) / self.batch_size)
        total = steps_per_epoch * self.epochs
        done = 0
        stop = EarlyStopping(self.patience, min_delta=1e-6)
        self.history_ = stop.history
        for epoch in range(1, self.epochs + 1):
            order = list(tr)
            rng.shuffle(order)
            model.train()
            losses = []
            for idx, enc in self._batches(queries, documents, order):
                # plain binary cross-entropy, as the paper: weighting the (minority) positives would
                # shift every logit by about log(neg / pos), a bias the temperature cannot undo, and
                # f is read as a probability
                target = torch.tensor(y[idx], dtype=torch.float32, device=model.device)
                loss = bce_with_logits(model(**enc).logits[:, 0], target)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
                done += 1
                if progress:
                    progress(done, total)
            z = self.logits([queries[i] for i in va], [documents[i] for i in va])
            nll = bce_with_logits(z, y[va])
            entry = {"epoch": epoch, "train_loss": float(np.mean(losses)), "val_nll": nll}
            if stop.update(epoch, nll, lambda: copy.deepcopy(model.state_dict()), entry):
                break
        if done < total and progress:
            progress(total, total)  # stopped early: the bar ends full
        self.best_epoch_ = stop.best_epoch
        if stop.best_state is None:
            raise InputError("the validation loss was never finite: the training diverged (lower the learning rate)")
        model.load_state_dict(stop.best_state)
        self._calibrate(self.logits([queries[i] for i in va], [documents[i] for i in va]), y[va])
        return self

    def save_weights(self, directory: Path) -> None:
        self.model.save(str(directory / ENCODER_DIR), safe_serialization=True)
        self.weights_sha256_ = sha256_file(directory / ENCODER_DIR / "model.safetensors")

    def restore(self, state: dict[str, Any], path: Path) -> None:
        """The fitted state and the encoder saved beside it, unchanged since it was saved."""
        super().restore(state, path)
        weights = path / ENCODER_DIR / "model.safetensors"
        remake = f"make a new one with `{self.fit_command}`"
        if not weights.is_file():
            raise InputError(f"{path}: the encoder weights {weights.name} are missing; {remake}")
        if sha256_file(weights) != self.weights_sha256_:  # a file cut short or changed since
            raise InputError(f"{weights}: the weights differ from those the forecaster was saved with; {remake}")
        try:
            self._model = _load_cross_encoder(str(path / ENCODER_DIR), self.max_length, self.device)
        except (OSError, ValueError) as e:  # its config or tokenizer files, which no checksum covers
            raise InputError(
                f"{path / ENCODER_DIR}: the forecaster's encoder does not load ({type(e).__name__}: {e}); {remake}"
            ) from None


class ProbeForecaster(ForecasterBase):
    """f(q, d) = sigmoid((w . standardised h(q, d) + b) / T), h the LLM's hidden state. `llm` needs
    the hidden_state capability; `C` is the inverse L2 strength of the logistic regression
    (scikit-learn's LogisticRegression, unweighted like the cross-encoder's loss)."""

    kind = "probe"
    format_name = "forecaster_probe"
    title = "probe forecaster"
    fit_command = "verirag train forecaster DATA --kind probe --model MODEL --out DIR"
    fitted_attribute = "coef_"
    refuse_on = ("model",)
    arrays = ("mean_", "scale_", "coef_")
    runtime = ("fingerprints", "llm")
    v1_state = ForecasterBase.v1_state + ("mean_", "scale_", "coef_", "intercept_")

    def __init__(
        self,
        llm,
        *,
        C: float = 0.1,
        val_share: float = 0.2,
        temperature: bool = True,
        seed: int = 0,
        max_iter: int = 2000,
        fingerprints: dict[str, Any] | None = None,
    ):
        if llm is None:
            raise InputError(
                "a probe forecaster reads an LLM's hidden states: it needs the model it was "
                "trained on (its fingerprints name it)"
            )
        llm.require("hidden_state")
        super().__init__({"model": llm.fingerprint, **(fingerprints or {})})
        self.llm, self.C, self.val_share, self.temperature, self.seed = llm, C, val_share, temperature, seed
        self.max_iter = max_iter

    def features(
        self, queries: Sequence[str], documents: Sequence[str], progress: Callable[[int, int], None] | None = None
    ) -> np.ndarray:
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
        self.check_fitted()
        x = self.features(queries, documents)
        return self._logits(x) if len(x) else np.zeros(0)

    def fit(
        self,
        queries: Sequence[str],
        documents: Sequence[str],
        labels: Sequence[int],
        groups: Sequence[str],
        *,
        val_groups: Sequence[str] | None = None,
        progress: Callable[[int, int], None] | None = None,
    ) -> ProbeForecaster:
        from sklearn.linear_model import LogisticRegression

        queries, documents, y, tr, va = self._split(queries, documents, labels, groups, val_groups)
        x = self.features(queries, documents, progress)
        self.mean_ = x[tr].mean(axis=0)
        self.scale_ = np.where(x[tr].std(axis=0) > 1e-8, x[tr].std(axis=0), 1.0)
        clf = LogisticRegression(C=self.C, max_iter=self.max_iter)
        clf.fit((x[tr] - self.mean_) / self.scale_, y[tr])
        self.coef_, self.intercept_ = clf.coef_[0].astype(np.float64), float(clf.intercept_[0])
        self._calibrate(self._logits(x[va]), y[va])
        return self


def load_forecaster(directory: str | Path, *, llm=None, encoder: str | None = None) -> ForecasterBase:
    """A saved forecaster of either kind: the cross-encoder (`Forecaster`; another `encoder` is
    refused, another RAG `llm` than the labels' warns), or the probe over an LLM's hidden states
    (`ProbeForecaster`), which needs `llm`, the model it was trained on."""
    path = Path(directory) / META_FILE
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(
            f"{directory} is not a forecaster (no {META_FILE}); train one with `verirag train forecaster`"
        ) from None
    except (OSError, ValueError) as e:
        raise InputError(f"{path} is not valid JSON: {e}") from None
    fingerprint = getattr(llm, "fingerprint", None)
    if d.get("format") == ProbeForecaster.format() or d.get("kind") == "probe":
        return ProbeForecaster.load(directory, expect={"model": fingerprint}, llm=llm)
    return Forecaster.load(directory, expect={"encoder": encoder, "model": fingerprint})


def _check_pairs(queries: Sequence[str], documents: Sequence[str]) -> tuple[list[str], list[str]]:
    if isinstance(queries, str) or isinstance(documents, str):
        raise TypeError("queries and documents are sequences of texts, not single strings")
    queries, documents = list(queries), list(documents)
    if len(queries) != len(documents):
        raise InputError(f"{len(queries)} queries but {len(documents)} documents")
    for i, (q, d) in enumerate(zip(queries, documents)):
        if not (q or "").strip():
            raise InputError(f"pair {i}: the query is empty")
        if not (d or "").strip():
            raise InputError(f"pair {i}: the document is empty")
    return queries, documents
