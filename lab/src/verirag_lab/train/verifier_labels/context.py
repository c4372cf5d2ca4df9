"""What every recipe reads: the sources, the run's seed and models, passage sets, grading.

Passage sets (k = 5 passages at most):
- gold: the question's evidence only (NQ: its gold passage; HotpotQA: both supporting paragraphs)
- mixed: the evidence among distractors, shuffled
- distractor: distractors only (no gold answer in any; for HotpotQA no supporting paragraph)
- non_relevant: NoMIRACL's own passages (none relevant)
Each set and every random choice comes from a generator seeded with the run's seed and the item's
own name, so a choice never depends on which other items ran before it.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from verirag.errors import InputError
from verirag.evaluation.ground_truth import matches
from verirag.metrics.abstention import is_abstention
from verirag.metrics.faithfulness import k_precision
from verirag.metrics.qa import normalize_answer
from verirag.retrieval.sentences import sentence_spans
from verirag.types import Passage
from verirag_lab.train.verifier_labels.generation import Generated, generate
from verirag_lab.train.verifier_labels.records import record_id
from verirag_lab.train.verifier_labels.sources import Question, Source
from verirag_lab.train.verifier_labels.spans import answer_kind, find_spans

CONDITIONS = ("gold", "mixed", "distractor")
PASSAGES_PER_QUESTION = 5
MATCH_RULE = "recall_or_substring"  # the AwF label's default rule (verirag.evaluation.ground_truth)
GROUNDED_PRECISION = 0.6  # share of a sentence's words found in its passages or question


@dataclass(frozen=True)
class Item:
    """One record to make: its id is known before any work, so a rerun skips it unmade."""

    id: str
    recipe: str
    dataset: str
    example: str
    make: Callable[[], dict[str, Any]]


def variant_items(
    recipe: str, q: Question, ctx: LabelContext, variants: Sequence[str], make: Callable[..., dict[str, Any]]
) -> list[Item]:
    """One item per variant of `q`, made by `make(ctx, q, item_id, variant)` when its turn comes."""
    items = []
    for variant in variants:
        item_id = record_id(recipe, q.dataset, q.id, variant, ctx.seed)
        items.append(Item(item_id, recipe, q.dataset, q.id, lambda i=item_id, v=variant: make(ctx, q, i, v)))
    return items


class RecipeFailure(Exception):
    """An item could not be made this time (an LLM error): nothing is written, the next run retries."""


@dataclass(frozen=True)
class Grade:
    correct: bool | None  # None: the question has no gold answers (NoMIRACL)
    evidence: bool
    abstained: bool

    @property
    def label(self) -> int:
        return int(bool(self.correct) and self.evidence and not self.abstained)

    def meta(self) -> dict[str, Any]:
        return {"correct": self.correct, "evidence": self.evidence, "abstained": self.abstained}


@dataclass(frozen=True)
class BaseAnswer:
    """A model's long answer from the question's gold passages, at temperature 0."""

    generated: Generated
    passages: list[str]
    grade: Grade
    grounded: list[bool]  # per sentence (split_sentences): its names and numbers are in the passages


class LabelContext:
    def __init__(
        self,
        sources: dict[str, Source],
        *,
        seed: int = 0,
        models: Sequence[str] = (),
        allowed: dict[str, list[str]] | None = None,
        llm_loader=None,
        real_per_question: int = 3,
        swap_from: Sequence[str] | None = None,
        judge_full_every: int = 5,
    ):
        self.sources, self.seed, self.models = sources, seed, list(models)
        self.real_per_question = real_per_question
        # The distill recipe's sample: 1 in this many answers is also judged over every passage (0: none).
        self.judge_full_every = judge_full_every
        # The swap recipe's origins of a replacement, first available first (None: drawn among all).
        self.swap_from = tuple(swap_from) if swap_from else None
        # Questions that may lend their answers to swaps: the non-excluded ones of each dataset.
        self.allowed = allowed if allowed is not None else {n: list(s.questions) for n, s in sources.items()}
        self._llm_loader = llm_loader
        self._llms: dict[str, Any] = {}
        self._bases: dict[tuple[str, str, str], BaseAnswer | None] = {}
        self._pools: dict[tuple[str, str], list[tuple[str, int]]] = {}
        self._shared: dict[Any, Any] = {}

    # -- lookups (records.Lookup) -------------------------------------------------------------
    def answers(self, dataset: str, example: str) -> tuple[str, ...]:
        return self.sources[dataset].question(example).answers

    def passage(self, dataset: str, key: str) -> Passage:
        return self.sources[dataset].passage(key)

    def question_text(self, dataset: str, example: str) -> str:
        return self.sources[dataset].question(example).text

    def passages(self, q: Question, keys: Sequence[str]) -> list[Passage]:
        return [self.passage(q.dataset, k) for k in keys]

    def rng(self, *parts: object) -> random.Random:
        return random.Random("|".join(map(str, (self.seed, *parts))))

    # -- passages -----------------------------------------------------------------------------
    def passage_set(self, q: Question, condition: str, k: int = PASSAGES_PER_QUESTION) -> list[str] | None:
        """Keys of `condition`'s passages (module doc), or None when it cannot be built."""
        source = self.sources[q.dataset]
        if condition == "non_relevant":
            return source.distractors(q, k) or None
        if condition == "gold":
            return list(q.gold) or None
        distractors = source.distractors(q, k if condition == "distractor" else max(1, k - len(q.gold)))
        if not distractors or not q.gold:
            return None
        keys = distractors if condition == "distractor" else list(q.gold) + distractors
        self.rng(q.group, condition).shuffle(keys)
        return keys

    def evidence_set(self, q: Question) -> list[str] | None:
        """The evidence among distractors ("mixed"), or the gold passages alone when no distractor
        is left: the set a swapped answer is judged against, so only the answer tells two apart."""
        return self.passage_set(q, "mixed") or self.passage_set(q, "gold")

    def conditions(self, q: Question) -> tuple[str, ...]:
        return ("non_relevant",) if not q.answers else CONDITIONS

    # -- grading ------------------------------------------------------------------------------
    def grade(self, q: Question, answer: str, keys: Sequence[str]) -> Grade:
        abstained = is_abstention(answer)
        correct = None if not q.answers else (not abstained and matches(answer, list(q.answers), MATCH_RULE))
        return Grade(correct=correct, evidence=self.sources[q.dataset].has_evidence(q, keys), abstained=abstained)

    def evidence_text(self, q: Question, keys: Sequence[str]) -> str:
        """The question and the passages' titles and texts: what a grounded sentence may name."""
        return " ".join([q.text] + [p.title + " " + p.text for p in self.passages(q, keys)])

    def names_grounded(self, sentence: str, evidence: str) -> bool:
        """Whether every name, number and date of `sentence` is in `evidence` (`evidence_text`)."""
        norm = normalize_answer(evidence)
        return all(normalize_answer(sp.text) in norm for sp in find_spans(sentence))

    def grounded(self, q: Question, sentence: str, keys: Sequence[str]) -> bool:
        """Whether every name, number and date of `sentence` is in its passages or the question,
        and most of its words are: a sentence of a correct answer that may be labelled supported."""
        evidence = self.evidence_text(q, keys)
        return self.names_grounded(sentence, evidence) and k_precision(sentence, evidence) >= GROUNDED_PRECISION

    # -- models -------------------------------------------------------------------------------
    def llm(self, model: str):
        if model not in self._llms:
            if self._llm_loader is None:
                raise InputError(f"no model loader: {model!r} cannot answer")
            self._llms[model] = self._llm_loader(model)
        return self._llms[model]

    def shared(self, key: Any, build: Callable[[], Any]) -> Any:
        """A part several items use (a pruner, a judge), built by `build` on first use, once per run."""
        if key not in self._shared:
            self._shared[key] = build()
        return self._shared[key]

    def generate(self, q: Question, model: str, style: str, keys: Sequence[str], temperature: float) -> Generated:
        """The model's answer; `RecipeFailure` when the backend returned an error."""
        g = generate(
            self.llm(model), model, style, q.text, self.passages(q, keys), temperature=temperature, seed=self.seed
        )
        if g.finish_reason == "error":
            raise RecipeFailure(f"{model} returned an error for {q.group}")
        return g

    def base_answer(self, q: Question, model: str) -> BaseAnswer | None:
        """`model`'s long answer from the gold passages at temperature 0 (one request, shared by
        the recipes that edit it); None when the question has no gold passages."""
        key = (q.dataset, q.id, model)
        if key not in self._bases:
            keys = self.passage_set(q, "gold")
            if keys is None:
                self._bases[key] = None
            else:
                g = self.generate(q, model, "long", keys, 0.0)
                grounded = [self.grounded(q, g.text[s:e], keys) for s, e in sentence_spans(g.text)]
                self._bases[key] = BaseAnswer(g, keys, self.grade(q, g.text, keys), grounded)
        return self._bases[key]

    # -- other questions' answers -------------------------------------------------------------
    def answer_pool(self, dataset: str, kind: str) -> list[tuple[str, int]]:
        """(example, answer index) of every allowed question's gold answers of `kind`."""
        if (dataset, kind) not in self._pools:
            source = self.sources[dataset]
            self._pools[(dataset, kind)] = [
                (qid, i)
                for qid in self.allowed.get(dataset, [])
                for i, a in enumerate(source.questions[qid].answers)
                if answer_kind(a) == kind
            ]
        return self._pools[(dataset, kind)]
