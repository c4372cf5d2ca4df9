"""How the trained verifier (`verirag.learned.verifier.TrainedVerifier`) learns: `fit` and its
steps, kept apart from the network and its reading of answers. A mixin of TrainedVerifier: it
reads the settings and the scorer the verifier holds (`_scorer`, `_tokenizer`, `reader`,
`_premises`, `read_window`, `train_layers`, ...), and writes the fitted state (`best_epoch_`,
`history_`, `temperature_`, `metrics_`, `n_train_`, ...). See the verifier's module doc for the
recipe: each claim reads only its `candidates` closest chunks, the frozen lower layers are read
once before the first epoch, validation holds out whole question groups, the best epoch is kept
and the temperature fitted there. With a `checkpoint` folder a killed fit resumes where it stopped
(`verirag.learned.checkpoint`: a run from the encoder takes about two hours on 2 cores)."""

from __future__ import annotations

import hashlib
import json
import logging
import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from verirag.errors import InputError
from verirag.learned.calibration import fit_temperature, validation_metrics
from verirag.learned.checkpoint import ResumableFit, checkpoint_key, remove_checkpoint
from verirag.learned.encoders import encoder_fingerprint
from verirag.learned.splits import split_by_group
from verirag.learned.training import EarlyStopping, bce_with_logits
from verirag.learned.verifier_inputs import Reading
from verirag.metrics.calibration import auroc, sigmoid

INFERENCE_BATCH = 32  # pairs per forward pass of training's frozen states
log = logging.getLogger(__name__)


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
    target: float | None = None  # a soft training target in [0, 1] (a judge's probability); None: the label
    partner: Prepared | None = None  # a changed copy's supported answer, trained in the same batch (`contrast`)


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
                ]
                # a soft target is part of what was learned; without one the fingerprint is as before
                + ([float(e.target)] if getattr(e, "target", None) is not None else []),
                ensure_ascii=False,
            ).encode()
        )
    return h.hexdigest()[:16]


def training_fields_digest(examples: Sequence[Any]) -> str:
    """A digest of what else of the examples shapes training but the saved fingerprint leaves out
    (their question groups, recipes, conversations and the answers copies were changed from): part
    of a checkpoint's key, so a run on relabelled data never resumes another's state."""
    h = hashlib.sha256()
    for e in examples:
        fields = [
            e.group,
            getattr(e, "recipe", None),
            list(getattr(e, "history", None) or ()),
            getattr(e, "changed_from", None),
        ]
        h.update(json.dumps(fields, ensure_ascii=False).encode())
    return h.hexdigest()[:16]


class VerifierTrainer:
    """`fit` and its steps (module doc)."""

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
        target = getattr(e, "target", None)
        if target is not None and not 0.0 <= float(target) <= 1.0:
            raise InputError(f"example {e.source or e.group}: a soft target must be in [0, 1], got {target!r}")
        return Prepared(r, int(e.label), sentence_labels, candidates, target=None if target is None else float(target))

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
                    p.target,
                ),
                z,
            )
            for p in batch
        ]

    def _batch_loss(self, batch: list[Prepared], states: list[Any]):
        """Mean BCE of the batch's aggregates over the candidate pairs (see the module docstring);
        with `contrast`, plus that weight times the mean pairwise loss of its changed copies,
        log(1 + exp(-(z_answer - z_copy))): the copy ranked below the answer it was changed from."""
        import torch

        losses = []
        aggregates = self._batch_aggregates(batch, states)
        for p, (sentence_logit, answer_logit) in zip(batch, aggregates):
            if p.sentence_labels is not None:
                loss = bce_with_logits(sentence_logit, p.sentence_labels)
            else:
                loss = bce_with_logits(answer_logit, float(p.label if p.target is None else p.target))
            losses.append(loss * p.weight)
        loss = torch.stack(losses).mean()
        if self.contrast:
            at = {id(p): k for k, p in enumerate(batch)}
            gaps = [
                aggregates[at[id(p.partner)]][1] - aggregates[k][1]
                for k, p in enumerate(batch)
                if p.partner is not None and id(p.partner) in at
            ]
            if gaps:
                loss = loss + self.contrast * torch.nn.functional.softplus(-torch.stack(gaps)).mean()
        return loss

    def _link_pairs(self, examples: list[Any], prepared: list[Prepared], tr: np.ndarray) -> None:
        """With `contrast`: each training copy (`changed_from`) linked to the supported training
        example it was changed from: the same group, question, conversation and passages, and its
        answer (where several are alike, the first takes them all); how many in `contrast_pairs_`."""
        self.contrast_pairs_ = 0
        if not self.contrast:
            return

        def key(e, answer: str) -> tuple:
            return (e.group, e.question, tuple(getattr(e, "history", ()) or ()), tuple(e.passages), answer)

        originals = {}
        for i in tr:
            e = examples[i]
            if int(e.label) == 1 and getattr(e, "changed_from", None) is None:
                originals.setdefault(key(e, e.answer), prepared[i])
        for i in tr:
            e = examples[i]
            source = getattr(e, "changed_from", None)
            if source is not None and (found := originals.get(key(e, source))) is not None:
                prepared[i].partner = found
                self.contrast_pairs_ += 1

    def _batches(self, order: list[Prepared]) -> list[list[Prepared]]:
        """`order` in batches of `batch_size`; with `contrast`, each changed copy right after its
        answer in one batch (a batch may then run over by an answer's copies)."""
        if not self.contrast:
            return [order[i : i + self.batch_size] for i in range(0, len(order), self.batch_size)]
        in_order = {id(p) for p in order}
        copies: dict[int, list[Prepared]] = {}
        riders: set[int] = set()  # copies that ride with their answer
        for p in order:
            if p.partner is not None and id(p.partner) in in_order:
                copies.setdefault(id(p.partner), []).append(p)
                riders.add(id(p))
        batches, batch = [], []
        for p in order:
            if id(p) in riders:
                continue
            batch += [p, *copies.get(id(p), [])]
            if len(batch) >= self.batch_size:
                batches.append(batch)
                batch = []
        return batches + ([batch] if batch else [])

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
        checkpoint: str | Path | None = None,
    ) -> VerifierTrainer:
        """Train on VerifierExamples (see the module docstring). `val_groups` names the held-out
        question groups (default: `val_share` of them, drawn with `seed`); `progress` is told
        (steps done, steps in all) after each step, `on_epoch` each epoch's history entry (a
        resumed run's earlier epochs are not told again). With a `checkpoint` folder the state is
        saved there every `checkpoint.CHECKPOINT_SECONDS` and after each epoch, a fit on the same
        examples and settings resumes from it (`epochs` and `patience` may differ), and it is
        removed when the fit ends."""
        self.pair_cache_key = None  # the weights change: their logits are no longer the saved ones'
        examples = self._readable(_check_examples(examples))
        tr, va = self._split(examples, val_groups)
        before = self._start_fit(examples)
        prepared = self._prepare_all(examples, tr, va)
        self._link_pairs(examples, prepared, tr)
        steps = self.epochs * math.ceil(len(tr) / self.batch_size)
        states = self._read_frozen(prepared, progress, steps)
        run = None
        if checkpoint is not None:
            key = (val_groups, training_fields_digest(examples))
            run = lambda opt, stop, rng: self._resumable(checkpoint, key, opt, stop, rng)  # noqa: E731
        stop = self._train(prepared, states, tr, va, progress, on_epoch, total=self._read_batches + steps, run=run)
        self._keep_best(stop, before)
        self._calibrate([prepared[i] for i in va], states)
        if checkpoint is not None:  # only now: a kill while compressing or calibrating resumes after the epochs
            remove_checkpoint(checkpoint)
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

        warm = type(self).load(self.init_from, device=self.device)
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

    def _readable(self, examples: list[Any]) -> list[Any]:
        """The examples whose question leaves room for a claim in this window: a question too long
        for a short training window (`max_length`) is left out, counted in `questions_too_long_`
        and warned about, instead of ending the run after its setup."""
        keep = [e for e in examples if self.reader.question_fits(e.question)]
        self.questions_too_long_ = len(examples) - len(keep)
        if not keep:
            raise InputError(f"no example's question fits the verifier's window of {self.max_length} tokens")
        if self.questions_too_long_:
            warnings.warn(
                f"{self.questions_too_long_} of {len(examples)} examples left out: the question alone fills the "
                f"window of {self.reader.window} tokens (train with a larger max_length to keep them)",
                stacklevel=3,
            )
        return keep

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
        run: Callable[..., ResumableFit] | None = None,
    ) -> EarlyStopping:
        """The epochs, each validated; stops after `patience` epochs without a better validation
        AUROC (ties: a lower validation loss). The history goes to `history_`. `run` (given the
        optimiser, the early stopping and the RNG) is the checkpoint a killed fit resumes from."""
        opt = self._optimizer()
        params = dict(self._scorer.named_parameters())
        rng = np.random.default_rng(self.seed)
        stop = EarlyStopping(self.patience)
        fit = run(opt, stop, rng) if run else None
        first_epoch, resumed = fit.resume() if fit else (1, None)
        self.history_ = stop.history
        per_epoch = math.ceil(len(tr) / self.batch_size)  # as `total` counts an epoch, for the bar
        done = self._read_batches + (first_epoch - 1) * per_epoch
        for epoch in range(first_epoch, self.epochs + 1):
            # the epoch a killed fit was inside goes on in its order, after its losses so far
            order, losses = resumed or (rng.permutation(tr), [])
            resumed = None
            losses, done = self._train_epoch(
                opt,
                self._batches([prepared[i] for i in order]),
                states,
                progress,
                done + len(losses),
                total,
                losses=losses,
                save=(lambda so_far, o=order, e=epoch: fit.save(e, o, so_far)) if fit else None,
                due=fit.due if fit else None,
            )
            entry = self._validation_entry(epoch, losses, [prepared[i] for i in va], states)
            # lower is better: the AUROC first (-1 where one class is missing), then the loss
            loss = (-(-1.0 if math.isnan(entry["val_auroc"]) else entry["val_auroc"]), entry["val_loss"])
            stopping = stop.update(epoch, loss, lambda: {n: params[n].detach().clone() for n in self._trainable}, entry)
            if on_epoch:
                on_epoch(entry)
            if stopping:
                break
            if fit:
                fit.save(epoch + 1, None, [])
        if done < total and progress:
            progress(total, total)  # stopped early: the bar ends full
        return stop

    def _train_epoch(
        self,
        opt,
        batches: list[list[Prepared]],
        states: list[Any],
        progress: Callable[[int, int], None] | None,
        done: int,
        total: int,
        losses: Sequence[float] = (),
        save: Callable[[list[float]], None] | None = None,
        due: Callable[[], bool] | None = None,
    ) -> tuple[list[float], int]:
        """One pass over `batches` after the first len(`losses`) (a resumed epoch's steps already
        taken): (each step's loss, steps done); `save` the state whenever `due`."""
        self._scorer.train()
        losses = list(losses)
        for batch in batches[len(losses) :]:
            loss = self._batch_loss(batch, states)
            opt.zero_grad()
            loss.backward()
            opt.step()
            losses.append(float(loss.item()))
            done += 1
            if save and due():
                save(losses)
            if progress:
                progress(done, total)
        return losses, done

    def _resumable(self, folder, data: tuple, opt, stop: EarlyStopping, rng) -> ResumableFit:
        """The fit's checkpoint in `folder`: its key is the data (the fingerprints, and `data`: the
        validation groups asked for and `training_fields_digest`), the encoder and the settings but
        `epochs` and `patience` (a killed run may be resumed with others)."""
        settings = {k: v for k, v in self.settings().items() if k not in ("epochs", "patience")}
        val_groups, fields = data
        groups = sorted(val_groups) if val_groups is not None else None
        key = checkpoint_key(fingerprints=self.fingerprints, settings=settings, val_groups=groups, fields=fields)
        params = dict(self._scorer.named_parameters())
        trained = lambda: {n: params[n] for n in self._trainable}  # noqa: E731
        return ResumableFit(folder, key, trained, opt, stop, rng, log.info)

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
