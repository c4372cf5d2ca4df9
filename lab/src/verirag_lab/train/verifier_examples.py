"""What the trained verifier learns from: one (question, answer, passages) with its label.

The labelling run (`verirag label verifier`) writes compact records (dataset ids, generated text,
labels, recipe, model fingerprint; never benchmark text) and resolves them into these against
../shared/data; the trainer (`verirag train verifier`) reads only these.
"""

from __future__ import annotations

from dataclasses import dataclass

SUPPORTED, UNSUPPORTED = 1, 0


@dataclass(frozen=True)
class VerifierExample:
    question: str
    answer: str
    passages: tuple[str, ...]  # what the answer was given (or is judged against)
    label: int  # SUPPORTED or UNSUPPORTED: the whole answer
    recipe: str  # how it was made: "real", "swap", "evidence_removal", "local_edit", ...
    group: str  # the question's group ("dataset:question id"): splits never cut one
    sentence_labels: tuple[int, ...] | None = None  # per answer sentence, where known (local edits)
    source: str = ""  # the record it came from (its id in the labels file)
    history: tuple[str, ...] = ()  # earlier turns of a conversation, oldest first ("User: ..." / "Agent: ...")
    judge: float | None = None  # the LLM judge's P(supported) of the answer, where its labels hold one (distill)
    target: float | None = None  # the training target where it is soft (in [0, 1]); None: the label
    changed_from: str | None = None  # a changed copy's supported answer (value swaps): the pair `contrast` ranks
