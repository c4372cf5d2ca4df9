"""The `unverified` verdict: when the judge cannot judge, say so instead of a confident verdict.

A verdict is "supported", "unsupported" or "unverified". An answer is unverified, with a reason,
when:
- `no_claim`: the answer has no letter and no digit ("…", "?!", "-"), or it is one word said over
  and over ("text text text text", a small model's loop): nothing to check. (A blank answer given
  to `verify` is refused as bad input before this; an empty generated answer is `no_claim`.) The
  trained verifier scored "text text text text" 0.65 against a passage about Paris: it was never
  shown such an answer, so it must not be asked.
- `no_passage_text`: no passage has a letter or a digit: nothing to check against.
- `answer_language`: the judge reads English only (the trained verifier, and the cascade whose
  first judge it is) and the answer is not English (`verirag.awf.language`); LLM judges read other
  languages, so the rule does not apply to them.
- `passage_language`: the judge reads English only and no passage is English: every passage with
  text is judged not English.
An unverified answer is never supported: `faithful` is False, and `ask` takes the action it takes
for an unsupported answer (abstain, fall back or escalate). The score the judge computed is kept,
but it is not to be trusted (docs/concepts/unverified.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from verirag.awf.language import guess_language
from verirag.types import Passage

NO_CLAIM = "no_claim"
NO_PASSAGE_TEXT = "no_passage_text"
ANSWER_LANGUAGE = "answer_language"
PASSAGE_LANGUAGE = "passage_language"
REASONS = (NO_CLAIM, NO_PASSAGE_TEXT, ANSWER_LANGUAGE, PASSAGE_LANGUAGE)
UNTRUSTED_SCORE = "the score is the judge's, computed where it cannot judge: do not trust it"


@dataclass(frozen=True)
class Unverified:
    """Why an answer is unverified: `reason` (one of REASONS), a sentence for people, and the
    language found where the reason is one of language."""

    reason: str
    message: str
    language: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def has_content(text: str) -> bool:
    """A letter or a digit: something that can be checked."""
    return any(ch.isalnum() for ch in text)


def one_word_repeated(text: str) -> bool:
    """Three or more words, all one word (case and punctuation aside): a loop, not a claim."""
    words = ["".join(ch for ch in w if ch.isalnum()).lower() for w in text.split()]
    words = [w for w in words if w]
    return len(words) >= 3 and len(set(words)) == 1


def why_unverified(answer: str, passages: Sequence[Passage], *, english_only: bool) -> Unverified | None:
    """The reason `answer` cannot be judged against `passages` (module doc), None when it can."""
    if not has_content(answer):
        return Unverified(NO_CLAIM, "the answer has no letter or digit: it makes no claim to check")
    if one_word_repeated(answer):
        return Unverified(NO_CLAIM, "the answer is one word repeated: it makes no claim to check")
    texts = [p.text for p in passages if has_content(p.text)]
    if not texts:
        return Unverified(NO_PASSAGE_TEXT, "no passage has text: there is nothing to check the answer against")
    if not english_only:
        return None
    guess = guess_language(answer)
    if guess.not_english:
        return Unverified(
            ANSWER_LANGUAGE,
            f"the answer is not in English (it reads as {guess.language!r}, P(English) "
            f"{guess.p_english:.3f}) and the judge was trained on English only",
            guess.language,
        )
    guesses = [guess_language(t) for t in texts]
    if all(g.not_english for g in guesses):
        return Unverified(
            PASSAGE_LANGUAGE,
            f"no passage is in English (the first reads as {guesses[0].language!r}) and the judge was "
            "trained on English only",
            guesses[0].language,
        )
    return None


class Verifiability:
    """The stage after the answer rules: marks the judgement unverified (`Judgement.unverified`)
    when `why_unverified` finds a reason; the score stays, a warning says it is not trusted.
    `english_only`: the judge reads English only (its predictor's `english_only`)."""

    name = "verifiable"

    def __init__(self, english_only: bool):
        self.english_only = english_only

    def run(self, state, say) -> None:
        j = state.judgement
        if j is None or (state.passages is not None and state.passages.untrusted):
            return  # nothing was answered from the passages: the untrusted rule says why
        passages = state.passages.passages if state.passages is not None else []
        found = why_unverified(j.answer, passages, english_only=self.english_only)
        if found is None:
            return
        j.unverified = found.to_dict()
        j.rules.append("unverified")
        if j.score is not None:
            j.warnings.append(UNTRUSTED_SCORE)
