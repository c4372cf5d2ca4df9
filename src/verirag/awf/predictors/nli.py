"""Post-Answering NLI (AwF, section 4 and appendix A.1).

Hypothesis: `The answer to the question "{q}" is: {a}`; each passage is a premise on its own,
split into chunks with a 20-word overlap when the pair would not fit the entailment model;
the decision function is the maximum entailment probability over all premises. A question asked
in a conversation (`verirag.conversation.InContext`) puts its last NLI_TURNS turns before the
hypothesis ("Conversation so far: User: ... Agent: ...", then the hypothesis with the bare question),
so that a follow-up's "it" is named where the judge reads it; older turns are cut (an NLI model's
window is short).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from verirag.awf.entailment.base import EntailmentModel
from verirag.awf.predictors.base import FaithfulnessPredictor, Verification, failed_request, invalid_input
from verirag.awf.registry import register
from verirag.conversation import question_and_history, speaker_lines
from verirag.errors import InputError
from verirag.prompts import load_prompt
from verirag.retrieval.chunking import chunk_words
from verirag.types import Passage

PREMISE_OVERLAP_WORDS = 20
NLI_TURNS = 4  # turns of a conversation read before the hypothesis


@register("predictor", "nli")
class PostAnsweringNLI(FaithfulnessPredictor):
    uses_entailment = True

    def __init__(
        self,
        entailment: EntailmentModel,
        *,
        overlap_words: int = PREMISE_OVERLAP_WORDS,
        hypothesis_template: str | None = None,
    ):
        self.entailment = entailment
        self.overlap_words = overlap_words
        self.hypothesis_template = hypothesis_template or load_prompt("entailment_judge").extra["hypothesis"]
        self.name = f"nli[{entailment.name}]"

    def hypothesis(self, question: str, answer: str) -> str:
        bare, history = question_and_history(question)
        hyp = self.hypothesis_template.format(question=bare.strip(), answer=answer.strip())
        if not history:
            return hyp
        return "Conversation so far: " + " ".join(speaker_lines(history)[-NLI_TURNS:]) + "\n" + hyp

    def verify(self, question: str, answer: str, passages: Sequence[Passage]) -> Verification:
        bad = invalid_input(answer, passages)
        if bad is not None:
            return bad
        hyp = self.hypothesis(question, answer)
        try:
            max_words = self.entailment.max_premise_words(hyp)
            pairs, owner = [], []
            for i, p in enumerate(passages):
                for chunk in chunk_words(
                    p.text, max_words=max_words, overlap_words=min(self.overlap_words, max_words - 1)
                ):
                    pairs.append((chunk, hyp))
                    owner.append(i)
            judgements = self.entailment.judge(pairs)
        except InputError as e:  # e.g. an answer too long for the judge's window even beside one word
            return failed_request("the entailment judge", e, len(passages))
        per: list[float | None] = [None] * len(passages)
        warnings = []
        for i, j in zip(owner, judgements):
            if j.ok:
                per[i] = j.prob if per[i] is None else max(per[i], j.prob)
            else:
                warnings.append(f"passage {passages[i].id}: {j.error}")
        scored = [(s, i) for i, s in enumerate(per) if s is not None]
        if not scored:
            return Verification(
                score=math.nan,
                per_passage=per,
                warnings=warnings,
                error="the entailment model could not judge any passage: " + "; ".join(warnings),
            )
        score, best = max(scored, key=lambda t: (t[0], -t[1]))  # first passage wins ties
        return Verification(score=score, per_passage=per, best=best, warnings=warnings)
