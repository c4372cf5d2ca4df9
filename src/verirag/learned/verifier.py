"""The trained verifier: a cross-encoder fine-tuned from a packaged sentence encoder that judges
whether passages support an answer, sentence by sentence (issue 27; the recipe of MiniCheck,
AlignScore and LettuceDetect, sized for a CPU).

    v = TrainedVerifier().fit(examples)            # VerifierExample (verirag_lab.train.verifier_examples)
    s = v.support(question, answer, passages)      # AnswerSupport: score, sentences, per_passage, best
    v.save("verifier/"); TrainedVerifier.load("verifier/")

What it reads (`verifier_inputs`): the answer is split into sentences, each read as a claim
"question + sentence"; the passages are cut into overlapping word chunks sized by the encoder's
tokenizer so that no (claim, chunk) pair is truncated. Each pair gets a logit (`verifier_model`:
mean-pooled encoder, linear head). A sentence's support is its best chunk; the answer's score is
its weakest sentence's support:

    score = sigmoid(min over sentences of max over chunks of logit(claim, chunk) / temperature_)

or, with `softmin` (a temperature in logit units, set at scoring time, never saved), the smooth
minimum `answer_logit` gives: never above the weakest sentence's, equal to it for one sentence, and
lowered by every other weak sentence, so a changed sentence moves the score even where another
sentence is weaker (the plain minimum ties there).

Training (`fit`, `verirag.learned.verifier_trainer`) optimises exactly that aggregate with binary cross-entropy against the answer's
label (or its soft `target`, a judge's probability, where it has one; or, where an example has
`sentence_labels`, each sentence's support against its own label),
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
(examples whose sentence labels did not match the answer's sentences), `questions_too_long_`
(examples left out: the question alone filled the window), `contrast_pairs_` (changed copies trained
beside their answer; with `contrast`), `adapter_sha256_`, `adapter_bytes_`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verirag.errors import InputError
from verirag.learned.adapter_part import ADAPTER_FILE as ADAPTER_FILE  # re-exported: where the weights are
from verirag.learned.adapter_part import EncoderAdapter
from verirag.learned.base import LearnedPart
from verirag.learned.encoders import DEFAULT_ENCODER, encoder_dir
from verirag.learned.pair_cache import active_pair_logits
from verirag.learned.verifier_inputs import PairReader, Reading, lexical_candidates, with_joint_premises
from verirag.learned.verifier_trainer import VerifierTrainer
from verirag.metrics.calibration import sigmoid

META_FILE = "verifier.json"
# Tokens (padding included) of one forward pass when scoring: measured on 2 cores (docs/results/verifier.md)
BATCH_TOKENS = 4096


def answer_logit(claim_logits: Sequence[float] | np.ndarray, softmin: float = 0.0) -> float:
    """The answer's logit from its claims' (each its best chunk's): their minimum, or with `softmin`
    > 0 the smooth minimum -softmin * log(sum(exp(-z / softmin))), which never exceeds the minimum
    (an answer is no better supported than its weakest sentence), equals it for one claim, and moves
    with every claim's logit (the minimum alone follows one claim and ignores the others)."""
    z = np.asarray(claim_logits, dtype=float)
    if z.size == 0:
        raise InputError("an answer without a claim has no score")
    if softmin < 0 or not np.isfinite(softmin):
        raise InputError(f"softmin must be a temperature of at least 0, got {softmin}")
    lowest = float(z.min())
    if softmin == 0 or z.size == 1 or not np.isfinite(lowest):
        return lowest
    # shifted by the minimum so that no exponent overflows; -inf claims (unread) are the minimum above
    return lowest - softmin * float(np.log(np.exp(-(z - lowest) / softmin).sum()))


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
    """`score`: the weakest sentence's support (`answer_logit`'s rule); `per_passage[i]`: the mean
    over the answer's sentences of passage i's support for each (1 when it alone supports every one,
    so a passage that supports the supported sentences ranks above one that supports none); `best`:
    the passage of highest `per_passage` (first on ties); `claim_logits`: each claim's calibrated
    logit (its best chunk's), what the answer rule combines."""

    score: float
    sentences: list[SentenceSupport]
    per_passage: list[float]
    best: int
    claim_logits: tuple[float, ...] = ()


class TrainedVerifier(VerifierTrainer, EncoderAdapter, LearnedPart):
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
    the result loads like any other), `contrast` (0: off; else the weight of a pairwise term that
    ranks a supported answer above its changed copy, `changed_from`, trained in the same batch:
    `verifier_trainer`)."""

    format_name = "verifier"
    noun = "verifier"
    title = "trained verifier"
    folder = META_FILE
    fitted_attribute = "best_epoch_"
    fit_command = "verirag train verifier LABELS --out DIR"
    refuse_on = ("encoder",)
    runtime = ("fingerprints", "device")
    batch_tokens = BATCH_TOKENS  # tokens of one forward pass when scoring: how it runs, not what it computes
    pair_cache_key: str | None = None  # set by `load`: the identity its pair logits are shared under

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
        contrast: float = 0.0,
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
        if not (isinstance(contrast, int | float) and not isinstance(contrast, bool) and contrast >= 0.0):
            raise InputError(f"contrast must be a weight of 0 (off) or more, got {contrast!r}")
        if not 0.0 < val_share < 1.0:
            raise InputError(f"the validation share must be in (0, 1), got {val_share}")
        self.encoder, self.max_length, self.train_layers, self.epochs = encoder, max_length, train_layers, epochs
        self.batch_size, self.learning_rate, self.head_learning_rate = batch_size, learning_rate, head_learning_rate
        self.balance, self.lora_rank, self.compress_rank = balance, lora_rank, compress_rank
        self.candidates, self.read_top, self.joint = candidates, read_top, bool(joint)
        self.overlap_words, self.val_share = overlap_words, val_share
        self.patience, self.temperature, self.seed, self.device = patience, temperature, seed, device
        self.init_from = None if init_from is None else str(init_from)
        self.contrast = float(contrast)
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
        """The logit of each (claim, chunk); inside a `shared_pair_logits()` block a saved verifier's
        are one shared statistic (`pair_cache`: whoever reads the same pairs reads them once)."""
        cache = active_pair_logits()
        if cache is None or self.pair_cache_key is None:  # no block, or weights not saved / being trained
            return self._score_pairs(claims, chunks)
        return cache.logits(self.pair_cache_key, claims, chunks, self._score_pairs)

    def _score_pairs(self, claims: list[str], chunks: list[str]) -> np.ndarray:
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

    softmin = 0.0  # the answer rule at scoring time (`answer_logit`); training reads the plain minimum

    def _answer_logit(self, table: np.ndarray) -> float:
        return answer_logit(table.max(axis=1), self.softmin)

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
            out[i] = self._support(reading, table / self.temperature_, len(passages[i]), self.softmin)
        return out  # type: ignore[return-value]  # every place is filled

    @staticmethod
    def _support(reading: Reading, table: np.ndarray, n_passages: int, softmin: float = 0.0) -> AnswerSupport:
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
            score=float(sigmoid(answer_logit(table.max(axis=1), softmin))),
            sentences=sentences,
            per_passage=per_passage,
            best=best,
            claim_logits=tuple(float(z) for z in claim_support),
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
        return np.array([sigmoid(self._answer_logit(t / self.temperature_)) for t in self._tables(readings)[1]])

    # ---- saved (save_weights, restore: EncoderAdapter) ----------------------------------------
    @classmethod
    def load(cls, path: str | Path, expect: dict[str, Any] | None = None, **runtime: Any) -> TrainedVerifier:
        """The verifier saved at `path` over the installed encoder; refused (InputError) when that
        encoder's weights are not those it was trained over, or `expect` differs (the one rule)."""
        part = super().load(path, expect, **runtime)
        part._put_adapter_back(path)
        # the saved weights, the encoder they sit on and the window: what a pair's logit depends on
        part.pair_cache_key = f"{part.adapter_sha256_}:{part.fingerprints.get('encoder', '')}:{part.read_window}:{part.device or 'default'}"
        return part
