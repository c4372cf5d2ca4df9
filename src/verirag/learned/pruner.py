"""The context pruner: scores each sentence of a retrieved passage for "holds what answers the
question" in one encoder pass per (question, window), and keeps the sentences whose score passes
a threshold, in their original order (issue 37; the recipe of Provence, Chirkova et al., ICLR 2025,
pooled per sentence, sized for a CPU).

    p = ContextPruner().fit(examples)             # PrunerExample (verirag_lab.train.pruner_examples)
    p.sentence_scores(question, passages)        # per passage, per sentence: calibrated probability
    p.prune(question, passages, threshold=None)  # PrunedPassage per passage (threshold_: fitted)
    p.prune(question, passages, titles=titles)   # and a passage the question or kept text names keeps its best sentence
    p.save("pruner/"); ContextPruner.load("pruner/")

What it reads (`pruner_inputs`): each passage split into sentences and packed into windows of whole
sentences beside the question, so a passage of any length is read to its end. The network
(`pruner_model`) is the packaged all-MiniLM-L6-v2 read as a cross-encoder; a linear head over the
mean of each sentence's tokens gives its logit; the probability is sigmoid(logit / temperature_).

Training: binary cross-entropy per sentence. Only the top `train_layers` layers and the head learn
(the states entering them are computed once), and their update is stored as its best rank
`compress_rank` approximation, so the saved adapter is small (the encoder is the installed
package's). Validation holds out whole questions; the best epoch by validation AUROC is kept; the
temperature and the threshold are fitted there: `threshold_` is the highest threshold at which at
least `recall` of the validation passages that hold an answering sentence keep one (`calibrate`).

Saved as a folder: `pruner.json` and `adapter.safetensors`. Fingerprints: "encoder" (loading over
other encoder weights is refused) and "data" (the training examples).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verirag.errors import InputError
from verirag.learned.adapter_part import ADAPTER_FILE as ADAPTER_FILE  # re-exported: where the weights are
from verirag.learned.adapter_part import EncoderAdapter
from verirag.learned.base import LearnedPart
from verirag.learned.calibration import fit_temperature, validation_metrics
from verirag.learned.checkpoint import ResumableFit, checkpoint_key
from verirag.learned.encoders import DEFAULT_ENCODER, encoder_dir, encoder_fingerprint
from verirag.learned.pruner_inputs import Window, passage_sentences, windows_for
from verirag.learned.splits import split_by_group_within
from verirag.learned.training import EarlyStopping, bce_with_logits
from verirag.metrics.calibration import auroc, sigmoid

META_FILE = "pruner.json"
INFERENCE_BATCH = 16  # windows per forward pass


@dataclass(frozen=True)
class PrunerExample:
    """One labelled (question, passage): `labels[i]` says whether sentence i holds what answers the
    question. `group` is the question (validation holds out whole questions); `source` the recipe."""

    question: str
    title: str
    sentences: tuple[str, ...]
    labels: tuple[int, ...]
    group: str
    source: str = ""


# Groups validated apart from the Wikipedia questions: adding documentation windows to the training
# data leaves the Wikipedia validation questions (benchmarks/pruner_recall.py reads them) as they were.
APART_GROUP_PREFIXES = ("docs:",)


def validation_stratum(group: str) -> str:
    """The stratum a question group is drawn for validation within (`split_by_group_within`)."""
    return next((p for p in APART_GROUP_PREFIXES if group.startswith(p)), "")


def recall_threshold(best_answer: np.ndarray, recall: float) -> float:
    """The highest threshold at which at least `recall` of the passages keep their answer, given
    each answer-holding passage's best answering-sentence probability (sorted ascending)."""
    k = int(np.floor((1 - recall) * len(best_answer)))
    return float(best_answer[k]) if len(best_answer) else 0.5


@dataclass(frozen=True)
class PrunedPassage:
    """One passage after pruning: its sentences, their scores, the kept ones' indices (in order)
    and `text`, the kept sentences joined; `hop`: its best sentence was kept because the question or
    another passage's kept text names it (`ContextPruner.prune` with titles)."""

    sentences: list[str]
    scores: list[float]
    kept: list[int]
    hop: bool = False

    @property
    def text(self) -> str:
        return " ".join(self.sentences[i] for i in self.kept)


def as_words(text: str) -> str:
    """`text` lower-cased, its punctuation and spacing one blank, padded with blanks: a phrase is named
    in a text as whole words when `as_words(phrase) in as_words(text)`."""
    return " " + re.sub(r"\W+", " ", text.lower()).strip() + " "


MIN_TITLE_CHARS = 3  # a title shorter than this, once normalised ("C++" is "c"), names too much


def hops(question: str, pruned: list[PrunedPassage], titles: Sequence[str | None]) -> list[PrunedPassage]:
    """`pruned` with the best sentence kept in each passage that kept nothing and whose title (as
    whole words, case and punctuation aside, at least `MIN_TITLE_CHARS` long) the question or the
    kept text of a passage with another title names. Chunks of one document share its title, and a
    chunk naming its own document says nothing about its siblings."""
    keys = [as_words(t or "") for t in titles]
    named = [as_words(" ".join(p.sentences[i] for i in p.kept)) for p in pruned]
    out = list(pruned)
    for k, (p, key) in enumerate(zip(pruned, keys)):
        if p.kept or not p.sentences or len(key.strip()) < MIN_TITLE_CHARS:
            continue
        context = as_words(question) + " ".join(v for j, v in enumerate(named) if keys[j] != key)
        if key in context:
            out[k] = PrunedPassage(p.sentences, p.scores, [int(np.argmax(p.scores))], hop=True)
    return out


def keep_sentences(
    question: str,
    scored: Sequence[tuple[list[str], list[float]]],
    threshold: float,
    titles: Sequence[str | None] | None = None,
) -> tuple[list[PrunedPassage], bool]:
    """What `ContextPruner.prune` keeps from sentence scores: the sentences at or above `threshold`;
    when none passes anywhere, the best sentence of the best passage (the flag says so); then, with
    `titles`, the hop rule (`hops`)."""
    out = [PrunedPassage(s, p, [i for i, v in enumerate(p) if v >= threshold]) for s, p in scored]
    fallback = not any(o.kept for o in out) and any(o.sentences for o in out)
    if fallback:
        k, i = max(
            ((k, int(np.argmax(o.scores))) for k, o in enumerate(out) if o.scores),
            key=lambda ki: out[ki[0]].scores[ki[1]],
        )
        out[k] = PrunedPassage(out[k].sentences, out[k].scores, [i])
    if titles is not None:
        out = hops(question, out, titles)
    return out, fallback


def examples_fingerprint(examples: Sequence[PrunerExample]) -> str:
    h = hashlib.sha256()
    for e in examples:
        h.update(json.dumps([e.question, e.title, list(e.sentences), list(e.labels)], ensure_ascii=False).encode())
    return h.hexdigest()[:16]


@dataclass
class _Unit:
    """A window read in training: its spans' token positions and labels."""

    window: Window
    spans: list[list[int]]
    labels: np.ndarray


def _checked_examples(examples: Sequence[PrunerExample]) -> list[PrunerExample]:
    """The examples, refused when there are none, when they hold one label only, or when an
    example's labels do not match its sentences."""
    examples = list(examples)
    if not examples:
        raise InputError("no training examples")
    labels = {y for e in examples for y in e.labels}
    if labels != {0, 1}:
        raise InputError(f"the pruner needs kept and dropped sentences to learn from, got labels {sorted(labels)}")
    for e in examples:
        if len(e.labels) != len(e.sentences):
            raise InputError(f"{e.group}: {len(e.sentences)} sentences but {len(e.labels)} labels")
    return examples


class ContextPruner(EncoderAdapter, LearnedPart):
    """Settings: `encoder`, `max_length` (tokens of a window), `train_layers`, `epochs` (at most),
    `batch_size` (windows per step), `learning_rate` (the layers'), `head_learning_rate`,
    `compress_rank` (rank of the stored update; 0 stores the layers in full), `recall` (share of
    the validation passages holding an answering sentence that keep one at the fitted threshold:
    the conservative threshold, `threshold_`, the default), `aggressive_recall` (the same for the
    aggressive threshold; both published in `thresholds_`), `val_share`, `patience`, `seed`."""

    format_name = "pruner"
    noun = "pruner"
    title = "context pruner"
    folder = META_FILE
    fitted_attribute = "best_epoch_"
    fit_command = "make pruner"
    refuse_on = ("encoder",)
    runtime = ("fingerprints", "device")

    def __init__(
        self,
        encoder: str = DEFAULT_ENCODER,
        *,
        max_length: int = 256,
        train_layers: int = 2,
        epochs: int = 3,
        batch_size: int = 16,
        learning_rate: float = 1e-4,
        head_learning_rate: float = 2e-3,
        compress_rank: int = 16,
        recall: float = 0.9,
        aggressive_recall: float | None = None,
        val_share: float = 0.15,
        patience: int = 1,
        seed: int = 0,
        device: str | None = None,
        fingerprints: dict[str, Any] | None = None,
    ):
        super().__init__(fingerprints)
        if epochs < 1 or batch_size < 1 or patience < 1 or train_layers < 1:
            raise InputError("epochs, batch_size, patience and train_layers must be at least 1")
        if max_length < 64:
            raise InputError(f"max_length must be at least 64 tokens, got {max_length}")
        if not 0.0 < recall <= 1.0 or not 0.0 < val_share < 1.0:
            raise InputError(f"recall must be in (0, 1] and val_share in (0, 1), got {recall}, {val_share}")
        self.encoder, self.max_length, self.train_layers, self.epochs = encoder, max_length, train_layers, epochs
        self.batch_size, self.learning_rate, self.head_learning_rate = batch_size, learning_rate, head_learning_rate
        if aggressive_recall is not None and not 0.0 < aggressive_recall <= recall:
            raise InputError(f"aggressive_recall must be in (0, recall], got {aggressive_recall}")
        self.compress_rank, self.recall, self.val_share = compress_rank, recall, val_share
        self.aggressive_recall = aggressive_recall
        self.patience, self.seed, self.device = patience, seed, device
        self._scorer = self._tokenizer = None
        self._trainable: list[str] = []
        self._adapter_path: Path | None = None

    # ---- the network --------------------------------------------------------------------------
    def _load_base(self) -> None:
        from verirag.learned.verifier_model import layer_count, load_scorer
        from verirag.retrieval.embedder import default_device

        self._scorer, self._tokenizer = load_scorer(encoder_dir(self.encoder), self.device or default_device())
        most = int(self._scorer.encoder.config.max_position_embeddings)
        if self.max_length > most:
            raise InputError(f"max_length {self.max_length} exceeds the encoder's window of {most} tokens")
        if self.train_layers > layer_count(self._scorer):
            raise InputError(f"train_layers {self.train_layers} exceeds the encoder's {layer_count(self._scorer)}")

    def _windows(self, question: str, sentences: Sequence[str]) -> list[Window]:
        return windows_for(self._tokenizer, question, sentences, self.max_length)

    # ---- scoring ------------------------------------------------------------------------------
    def _window_logits(self, windows: list[Window]) -> list[np.ndarray]:
        import torch

        from verirag.learned.pruner_model import full_hidden, span_logits, span_tokens

        self._scorer.eval()
        out: list[np.ndarray] = [np.zeros(0)] * len(windows)
        order = sorted(range(len(windows)), key=lambda i: len(windows[i].text))  # less padding
        with torch.inference_mode():
            for start in range(0, len(order), INFERENCE_BATCH):
                idx = order[start : start + INFERENCE_BATCH]
                batch = [windows[i] for i in idx]
                spans = span_tokens(self._tokenizer, batch, self.max_length)
                z = span_logits(self._scorer, full_hidden(self._scorer, self._tokenizer, batch, self.max_length), spans)
                z = z.float().cpu().numpy()
                at = 0
                for i, rows in zip(idx, spans):
                    out[i], at = z[at : at + len(rows)], at + len(rows)
        return out

    def sentence_scores(self, question: str, passages: Sequence[str]) -> list[tuple[list[str], list[float]]]:
        """Per passage: its sentences (`passage_sentences`) and each one's probability of holding
        what answers `question`. All windows of all passages are scored in shared batches."""
        self.check_fitted()
        if self._scorer is None:
            self._load_base()
        split = [passage_sentences(p) for p in passages]
        windows, owner = [], []
        for k, sentences in enumerate(split):
            for w in self._windows(question, sentences):
                windows.append(w)
                owner.append(k)
        logits = self._window_logits(windows) if windows else []
        best = [np.full(len(s), -np.inf) for s in split]
        for w, k, z in zip(windows, owner, logits):
            for i, zi in zip(w.sentence_of, z):
                best[k][i] = max(best[k][i], zi)  # a sentence read in pieces: its best piece
        return [(s, [float(v) for v in sigmoid(b / self.temperature_)]) for s, b in zip(split, best)]

    def prune(
        self,
        question: str,
        passages: Sequence[str],
        threshold: float | None = None,
        titles: Sequence[str | None] | None = None,
    ) -> tuple[list[PrunedPassage], bool]:
        """Each passage with the sentences scoring at least `threshold` (None: `threshold_`) kept.

        When no sentence of any passage passes, the best sentence of the best passage is kept, so
        the reader never gets an empty context; the flag says that happened.

        Then, with `titles` (one per passage, None where it has none), a passage that kept nothing
        and whose title the question or the kept text of a passage with another title names keeps its
        best sentence (`hop`, see `hops`): the second hop of a multi-hop question (the director named
        in the film's passage, and the director's own passage that holds the answer) scores low
        against the question alone, and its best sentence is mostly the one the chain needs. One
        pass, no second encoder read."""
        t = self.threshold_ if threshold is None else float(threshold)
        if not 0.0 <= t <= 1.0:
            raise InputError(f"the pruning threshold must be in [0, 1], got {t}")
        if titles is not None and len(titles) != len(passages):
            raise InputError(f"{len(titles)} titles for {len(passages)} passages")
        return keep_sentences(question, self.sentence_scores(question, passages), t, titles)

    # ---- training -----------------------------------------------------------------------------
    def _units(self, examples: Sequence[PrunerExample]) -> list[_Unit]:
        from verirag.learned.pruner_model import span_tokens

        units = []
        for e in examples:
            for w in self._windows(e.question, e.sentences):
                spans = span_tokens(self._tokenizer, [w], self.max_length)[0]
                units.append(_Unit(w, spans, np.array([e.labels[i] for i in w.sentence_of], dtype=np.float32)))
        return units

    def _states(self, units: list[_Unit], say) -> list[Any]:
        from verirag.learned.pruner_model import lower_states
        from verirag.learned.verifier_model import layer_count

        stop = layer_count(self._scorer) - self.train_layers
        states: list[Any] = []
        for start in range(0, len(units), 64):
            batch = [u.window for u in units[start : start + 64]]
            states += lower_states(self._scorer, self._tokenizer, batch, self.max_length, stop)
            say(f"encoded {min(start + 64, len(units))}/{len(units)} windows")
        return states

    def _logits(self, units: list[_Unit], states: list[Any]):
        from verirag.learned.pruner_model import span_logits, upper_hidden
        from verirag.learned.verifier_model import layer_count

        hidden = upper_hidden(self._scorer, states, layer_count(self._scorer) - self.train_layers)
        return span_logits(self._scorer, hidden, [u.spans for u in units])

    def _validate(self, units: list[_Unit], states: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        import torch

        self._scorer.eval()
        zs = []
        with torch.inference_mode():
            for start in range(0, len(units), 64):
                zs.append(self._logits(units[start : start + 64], states[start : start + 64]).float().cpu().numpy())
        return np.concatenate(zs), np.concatenate([u.labels for u in units])

    def fit(
        self, examples: Sequence[PrunerExample], say=lambda _m: None, checkpoint: str | Path | None = None
    ) -> ContextPruner:
        """Train on `examples` (see the module's docstring); `say` reports progress. With a
        `checkpoint` folder the run's state is saved there every `checkpoint.CHECKPOINT_SECONDS` and after each
        epoch, and a run on the same examples and settings resumes from it (`epochs` and `patience`
        may differ: a finished run can be given more epochs); it is removed when the fit ends."""
        import torch

        from verirag.learned.verifier_model import compress_update, merge_lora, round_to_fp16, select_trainable

        examples = _checked_examples(examples)
        torch.manual_seed(self.seed)
        self._load_base()
        self.fingerprints = {
            **self.fingerprints,
            "encoder": encoder_fingerprint(self.encoder),
            "data": examples_fingerprint(examples),
        }
        groups = [e.group for e in examples]
        tr, va = split_by_group_within(groups, [validation_stratum(g) for g in groups], self.val_share, self.seed)
        train_units = self._units([e for e, m in zip(examples, tr) if m])
        val_units = self._units([e for e, m in zip(examples, va) if m])
        if not val_units or not train_units:
            raise InputError("too few question groups to hold some out for validation")
        states_tr, states_va = self._states(train_units, say), self._states(val_units, say)
        self._trainable = select_trainable(self._scorer, self.train_layers)
        params = dict(self._scorer.named_parameters())
        before = {n: params[n].detach().clone() for n in self._trainable}
        head = [p for n, p in params.items() if n in self._trainable and n.startswith("head.")]
        body = [p for n, p in params.items() if n in self._trainable and not n.startswith("head.")]
        opt = torch.optim.AdamW(
            [{"params": body, "lr": self.learning_rate}, {"params": head, "lr": self.head_learning_rate}]
        )
        pos = float(np.mean(np.concatenate([u.labels for u in train_units])))
        pos_weight = torch.tensor((1 - pos) / max(pos, 1e-6))  # answering sentences are rare
        stop = EarlyStopping(self.patience)
        rng = np.random.default_rng(self.seed)
        run = self._resumable(checkpoint, params, opt, stop, rng, say) if checkpoint is not None else None
        first_epoch, resumed = run.resume() if run else (1, None)
        for epoch in range(first_epoch, self.epochs + 1):
            # the epoch a killed run was inside goes on in its order, after its losses so far
            order, losses = resumed or (rng.permutation(len(train_units)), [])
            resumed = None
            losses = self._train_epoch(
                opt, train_units, states_tr, order, pos_weight, epoch, say, losses=losses, run=run
            )
            z, y = self._validate(val_units, states_va)
            entry = {"epoch": epoch, "train_loss": float(np.mean(losses)), "val_loss": bce_with_logits(z, y)}
            entry["val_auroc"] = float(auroc(z, y))
            say(f"epoch {epoch}: train loss {entry['train_loss']:.4f}, val AUROC {entry['val_auroc']:.4f}")
            state = lambda: {n: p.detach().clone() for n, p in self._scorer.named_parameters() if n in self._trainable}  # noqa: E731
            # lower is better: the AUROC first, then the loss, as the verifier keeps its best epoch.
            # The loss alone is the wrong rule here: training weights the rare kept sentences up and
            # validation does not, so its loss is noisy and not aligned with the ranking (all the
            # threshold uses); the temperature fitted afterwards repairs the calibration.
            val_auroc = -1.0 if math.isnan(entry["val_auroc"]) else entry["val_auroc"]
            if not math.isfinite(entry["val_loss"]):  # a diverged epoch is never the best one
                val_auroc = -math.inf
            if stop.update(epoch, (-val_auroc, entry["val_loss"]), state, entry):
                break
            if run:
                run.save(epoch + 1, None, [])
        if run:
            run.finish()
        if stop.best_epoch is None:
            raise InputError("the pruner's training diverged (no epoch had a finite validation loss)")
        self.best_epoch_, self.history_ = stop.best_epoch, stop.history
        with torch.no_grad():
            for n, t in stop.best_state.items():
                params[n].copy_(t)
        if self.compress_rank:
            self._trainable = compress_update(self._scorer, before, self.train_layers, self.compress_rank)
        round_to_fp16(self._scorer, self._trainable)  # what is saved is what is measured
        if self.compress_rank:
            merge_lora(self._scorer)
        self.calibrate([e for e, m in zip(examples, va) if m])
        self.n_train_, self.n_val_ = len(train_units), len(val_units)
        return self

    def _resumable(self, folder, params: dict[str, Any], opt, stop: EarlyStopping, rng, say) -> ResumableFit:
        """The fit's checkpoint in `folder`: its key is the data, the encoder and the settings but
        `epochs` and `patience` (a finished run may be given more epochs)."""
        settings = {k: v for k, v in self.settings().items() if k not in ("epochs", "patience")}
        key = checkpoint_key(fingerprints=self.fingerprints, settings=settings)
        trained = lambda: {n: p for n, p in params.items() if n in self._trainable}  # noqa: E731
        return ResumableFit(folder, key, trained, opt, stop, rng, say)

    def _train_epoch(
        self, opt, units: list, states: list, order, pos_weight, epoch: int, say, losses=(), run=None
    ) -> list[float]:
        """One pass over the training units in `order`, in batches: each step's loss (BCE with the
        rare kept sentences weighted up by `pos_weight`), after the `losses` of the steps a resumed
        run already took. `say` hears the windows trained so far (an epoch of all six layers takes
        most of an hour on 2 cores); `run` saves the state now and then."""
        import torch

        self._scorer.train()
        losses = list(losses)
        for start in range(len(losses) * self.batch_size, len(order), self.batch_size):
            idx = order[start : start + self.batch_size]
            z = self._logits([units[i] for i in idx], [states[i] for i in idx])
            y = torch.from_numpy(np.concatenate([units[i].labels for i in idx]))
            loss = torch.nn.functional.binary_cross_entropy_with_logits(z, y, pos_weight=pos_weight)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.detach()))
            say(f"epoch {epoch}: trained {min(start + self.batch_size, len(order))}/{len(order)} windows")
            if run and run.due():
                run.save(epoch, order, losses)
        return losses

    def calibrate(self, examples: Sequence[PrunerExample]) -> ContextPruner:
        """Fit the temperature, the threshold and the metrics on held-out `examples` (`fit` does it
        on its validation questions; calling it again refits them without training).

        `threshold_` is the highest threshold at which at least `recall` of the passages that hold
        an answering sentence keep one: what decides whether the reader can still answer (a
        per-sentence recall would keep every paraphrase of the answer, and most of the text)."""
        if self._scorer is None:
            self._load_base()
        z_all, y_all, passages = [], [], []
        for e in examples:
            windows = self._windows(e.question, e.sentences)
            best = np.full(len(e.sentences), -np.inf)
            for w, z in zip(windows, self._window_logits(windows) if windows else []):
                for i, zi in zip(w.sentence_of, z):
                    best[i] = max(best[i], zi)
            z_all.append(best)
            y_all.append(np.asarray(e.labels, dtype=np.float64))
            passages.append((best, np.asarray(e.labels, dtype=bool), np.array([len(x.split()) for x in e.sentences])))
        z, y = np.concatenate(z_all), np.concatenate(y_all)
        self.temperature_ = fit_temperature(z, y)
        # per passage holding an answer: the best answering sentence's probability
        best_answer = np.sort([sigmoid(b[lab] / self.temperature_).max() for b, lab, _ in passages if lab.any()])
        self.threshold_ = recall_threshold(best_answer, self.recall)
        # Provence's practice: two published operating points, chosen on validation data
        self.thresholds_ = {"conservative": self.threshold_}
        if self.aggressive_recall is not None:
            self.thresholds_["aggressive"] = recall_threshold(best_answer, self.aggressive_recall)
        p = sigmoid(z / self.temperature_)
        kept = p >= self.threshold_
        words = np.concatenate([w for _, _, w in passages])
        self.metrics_ = {
            **validation_metrics(p, y),
            "auroc": float(auroc(p, y)),
            "passages": len(passages),
            "passages_keeping_an_answer": float(np.mean(best_answer >= self.threshold_)) if len(best_answer) else None,
            "answer_sentences_kept": float(kept[y == 1].mean()) if (y == 1).any() else float("nan"),
            "sentences_kept": float(kept.mean()),
            "words_kept": float(words[kept].sum() / max(words.sum(), 1)),
        }
        return self

    def named_threshold(self, name: str) -> float:
        """A published threshold by name ("conservative" is `threshold_`)."""
        self.check_fitted()
        published = getattr(self, "thresholds_", None) or {"conservative": self.threshold_}
        if name not in published:
            raise InputError(f"this pruner publishes no {name!r} threshold; it has {', '.join(published)}")
        return float(published[name])

    # ---- saved (save_weights, restore: EncoderAdapter) ----------------------------------------
    @classmethod
    def load(cls, path: str | Path, expect: dict[str, Any] | None = None, **runtime: Any) -> ContextPruner:
        """The pruner saved at `path` over the installed encoder; refused (InputError) when that
        encoder's weights are not those it was trained over, or `expect` differs."""
        part = super().load(path, expect, **runtime)
        part._put_adapter_back(path)
        return part
