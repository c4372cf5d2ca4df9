"""Post-Answering NLI (AwF, section 4 and appendix A.1).

Hypothesis: `The answer to the question "{q}" is: {a}`; each passage is a premise on its own,
split into chunks with a 20-word overlap when the pair would not fit the entailment model;
the decision function is the maximum entailment probability over all premises. A question asked
in a conversation (`verirag.conversation.InContext`) puts its last NLI_TURNS turns before the
hypothesis ("Conversation so far: User: ... Agent: ...", then the hypothesis with the bare question),
so that a follow-up's "it" is named where the judge reads it; older turns are cut (an NLI model's
window is short).

`premise="evidence"` reads fewer tokens: the trained verifier (`verifier=DIR`, else the shipped one,
~0.1 s, no LLM) picks each answer sentence's best chunk (with its partner from another passage where
the verifier reads two together; `evidence_chunks=N`: its N best), and the judge reads those chunks,
in passage order (chunks of one passage that overlap read as one span), as one premise instead of every
passage in full: one LLM call of a few hundred tokens instead of one per passage. The score is that
judgement; `per_passage` holds it for each passage that lent a chunk and None for the others (not
read), and `best` is the first of those. Where the evidence is over EVIDENCE_MAX_SHARE of the
passages' words (short passages, a long answer) it reads the passages in full instead, as
`premise="passages"` does.
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
PREMISES = ("passages", "evidence")
EVIDENCE_OPTIONS = ("premise", "verifier", "evidence_chunks")
# premise="evidence" reads the passages in full when the evidence is over this share of their words:
# the LLM's time is its prompt's tokens, so a premise nearly as long saves little and loses context
EVIDENCE_MAX_SHARE = 0.5


def evidence_saves(premise: str, passages: Sequence[Passage]) -> bool:
    """Whether nli reads `premise` instead of the passages: it holds words, at most EVIDENCE_MAX_SHARE of theirs."""
    words = len(premise.split())
    return 0 < words <= EVIDENCE_MAX_SHARE * sum(len(p.text.split()) for p in passages)


def merged_spans(text: str, chunks: Sequence[str]) -> list[str]:
    """The parts of `text` that `chunks` (slices of it, as `chunk_words` makes them) cover, chunks that
    overlap or touch joined into one span, in text order; a chunk not found in `text` is kept as it is."""
    spans, stray = [], []
    for chunk in chunks:
        at = text.find(chunk)
        if at >= 0:
            spans.append((at, at + len(chunk)))
        elif chunk not in stray:
            stray.append(chunk)
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1] + 1:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    return [text[start:end] for start, end in merged] + stray


@register("predictor", "nli")
class PostAnsweringNLI(FaithfulnessPredictor):
    uses_entailment = True

    def __init__(
        self,
        entailment: EntailmentModel,
        *,
        overlap_words: int = PREMISE_OVERLAP_WORDS,
        hypothesis_template: str | None = None,
        premise: str = "passages",
        verifier: str | None = None,
        evidence_chunks: int = 1,
    ):
        if premise not in PREMISES:
            raise InputError(f"nli's premise is one of {', '.join(PREMISES)}, got {premise!r}")
        if verifier is not None and premise != "evidence":
            raise InputError("nli reads a verifier only to pick its evidence: give verifier= with premise=evidence")
        if evidence_chunks < 1:
            raise InputError(f"evidence_chunks must be at least 1, got {evidence_chunks}")
        if evidence_chunks != 1 and premise != "evidence":
            raise InputError("evidence_chunks is how much evidence nli reads: give it with premise=evidence")
        self.evidence_chunks = evidence_chunks
        self.entailment = entailment
        self.overlap_words = overlap_words
        self.hypothesis_template = hypothesis_template or load_prompt("entailment_judge").extra["hypothesis"]
        self.name = f"nli[{entailment.name}]" + ("(evidence)" if premise == "evidence" else "")
        self.evidence_finder = None
        if premise == "evidence":
            from verirag.awf.predictors.verifier import TrainedVerifierPredictor

            # the verifier scores at least as many chunks per sentence as the judge is to read
            finder = TrainedVerifierPredictor(verifier=verifier)
            if evidence_chunks > (finder.model.read_top or evidence_chunks):
                finder = TrainedVerifierPredictor(verifier=verifier, read_top=evidence_chunks)
            self.evidence_finder = finder

    def identity(self) -> dict:
        """nli over the passages keeps the identity it had before it could read evidence, so that its
        cached judgements, the cascade band's calibration and fitted stacks still name it."""
        ident = super().identity()
        if self.evidence_finder is None:
            ident["options"] = {k: v for k, v in ident["options"].items() if k not in EVIDENCE_OPTIONS}
        return ident

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
        if self.evidence_finder is not None:
            return self._verify_evidence(question, answer, passages)
        return self._verify_passages(question, answer, passages)

    def _verify_passages(self, question: str, answer: str, passages: Sequence[Passage]) -> Verification:
        hyp = self.hypothesis(question, answer)
        try:
            pairs, owner = [], []
            for i, p in enumerate(passages):
                for chunk in self._premise_chunks(p.text, hyp):
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

    def _premise_chunks(self, text: str, hyp: str) -> list[str]:
        max_words = self.entailment.max_premise_words(hyp)
        return chunk_words(text, max_words=max_words, overlap_words=min(self.overlap_words, max_words - 1))

    def evidence(self, question: str, answer: str, passages: Sequence[Passage]) -> tuple[str, list[int]]:
        """(the premise `premise="evidence"` reads, the passages that lent it a chunk): each answer
        sentence's `evidence_chunks` best chunks as the verifier scores them (`TrainedVerifier.evidence`),
        chunks of one passage that overlap or touch read as one span, spans in passage order."""
        bare, history = question_and_history(question)
        texts = [p.text for p in passages]
        picked = self.evidence_finder.model.evidence(bare, answer, texts, history, per_sentence=self.evidence_chunks)
        by_passage: dict[int, list[str]] = {}
        for i, chunk in picked:
            by_passage.setdefault(i, []).append(chunk)
        pieces = [span for i in sorted(by_passage) for span in merged_spans(texts[i], by_passage[i])]
        return "\n\n".join(pieces), sorted(by_passage)

    def _verify_evidence(self, question: str, answer: str, passages: Sequence[Passage]) -> Verification:
        try:
            premise, lent = self.evidence(question, answer, passages)
        except InputError as e:  # the verifier cannot read it (e.g. a question longer than its window)
            v = self._verify_passages(question, answer, passages)
            v.warnings.append(f"the verifier could not pick the evidence ({e}): nli read every passage")
            return v
        if not evidence_saves(premise, passages):
            return self._verify_passages(question, answer, passages)  # little to save: read it all
        hyp = self.hypothesis(question, answer)
        try:
            # a long answer's evidence may exceed the judge's window: then read in pieces, as passages are
            fits = len(premise.split()) <= self.entailment.max_premise_words(hyp)
            pieces = [premise] if fits else self._premise_chunks(premise, hyp)
            judgements = self.entailment.judge([(c, hyp) for c in pieces])
        except InputError as e:
            return failed_request("the entailment judge", e, len(passages))
        ok = [j.prob for j in judgements if j.ok]
        if not ok:
            errors = "; ".join(str(j.error) for j in judgements)
            return Verification(
                score=math.nan,
                per_passage=[None] * len(passages),
                error=f"the entailment model could not judge the evidence: {errors}",
            )
        score = max(ok)
        per: list[float | None] = [score if i in lent else None for i in range(len(passages))]
        warnings = [f"the evidence, piece {k + 1}: {j.error}" for k, j in enumerate(judgements) if not j.ok]
        return Verification(score=score, per_passage=per, best=lent[0], warnings=warnings)
