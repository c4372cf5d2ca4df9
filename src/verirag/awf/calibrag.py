"""The LLM steps of CalibRAG (Jang et al.): guidance from one document, its verbalized confidence,
the surrogate user's decision, and the query reformulation of stage 3.

Each step is one request (through whatever cache and meter wrap the LLM) and never raises for
what the model writes: an unreadable confidence or an empty reply comes back as an `error` string
beside the text, so callers record it instead of dropping the example.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from verirag.errors import VeriragError
from verirag.llm.base import LLM
from verirag.metrics.abstention import is_abstention
from verirag.prompts import load_prompt
from verirag.types import Passage

NO_ANSWER = "no answer"

# Verbalized confidence on CalibRAG's linguistic scale: appendix E table 6 lists eleven certainty
# levels, in this order. The paper gives no numbers, so the levels are spread evenly over [0, 1] in
# the paper's order (level i -> i / 10, as the Number scale reads 0..10), even where a reader might
# rank two neighbours the other way (Likely before Possible).
LINGUISTIC_SCALE: dict[str, float] = {
    "unlikely": 0.0,
    "doubtful": 0.1,
    "uncertain": 0.2,
    "ambiguous": 0.3,
    "probable": 0.4,
    "likely": 0.5,
    "possible": 0.6,
    "specified": 0.7,
    "confirmed": 0.8,
    "certain": 0.9,
    "inevitable": 1.0,
}
_NEGATIONS = {"not", "never", "hardly", "barely"}


@dataclass
class Guidance:
    """The RAG model's reply from one document: `text` (the guidance z), the conversation that
    produced it (`messages`, with the reply), and `error` when generation failed or was empty."""

    text: str
    messages: list[dict]
    error: str | None = None

    @property
    def no_answer(self) -> bool:
        return is_abstention(self.text)  # empty, "no answer", "the document does not say", ...


@dataclass
class Confidence:
    """A verbalized confidence: `value` in [0, 1] (None when unreadable), the raw reply, `error`,
    and `term` (the certainty term read, on the linguistic scale)."""

    value: float | None
    raw: str
    error: str | None = None
    term: str | None = None

    def shown(self) -> str:
        """How the confidence is written for the surrogate user: what the model said, as read."""
        if self.value is None:
            return "not stated"
        return self.term.capitalize() if self.term else f"{round(self.value * 10)}/10"


def document_text(p: Passage) -> tuple[str, str]:
    return (p.title or "").strip(), (p.text or "").strip()


def generate_guidance(llm: LLM, question: str, passage: Passage, *, max_tokens: int = 48) -> Guidance:
    """z ~ M(z | q, d): the answer from this one document (prompt `calibrag_guidance`)."""
    title, text = document_text(passage)
    messages = load_prompt("calibrag_guidance").messages(question=question, title=title or "untitled", text=text)
    try:
        gen = llm.generate(messages, max_tokens=max_tokens)
    except VeriragError as e:
        return Guidance("", messages, f"{type(e).__name__}: {e}")
    reply: dict = {"role": "assistant", "content": gen.text}
    if gen.token_ids:  # the backend reads the reply exactly as decoding produced it (prefix reuse)
        reply["token_ids"] = list(gen.token_ids)
    text = gen.text.strip()
    return Guidance(text, [*messages, reply], None if text else "the model returned an empty answer")


def parse_number_confidence(text: str) -> float | None:
    """A stated confidence in [0, 1]: a whole number 0..10 ("Certainty: 8", "8/10", "8 out of 10"),
    a percentage ("80%") or a probability ("0.8"). Only what follows the last colon is read, so
    "on a scale of 0 to 10: 8" is 8. Anything else (out of range, no number) is None."""
    t = (text or "").split(":")[-1]
    m = re.search(r"(?<![\d.])(\d{1,3}(?:\.\d+)?)\s*%", t)
    if m:
        v = float(m.group(1)) / 100.0
        return v if 0.0 <= v <= 1.0 else None
    m = re.search(r"(?<![\d.])(10|[0-9])\s*(?:/|out of)\s*10\b", t)
    if m:
        return int(m.group(1)) / 10.0
    m = re.search(r"(?<![\d.])(0?\.\d+|1\.0+|10|[0-9])(?![\d]|\.\d)", t)
    if not m:
        return None
    v = float(m.group(1))
    return v if "." in m.group(1) else v / 10.0


def linguistic_term(text: str) -> str | None:
    """The first term of LINGUISTIC_SCALE in a reply that is not negated ("not certain" is no
    reading of "certain")."""
    words = re.findall(r"[a-z]+", (text or "").lower())
    return next(
        (w for i, w in enumerate(words) if w in LINGUISTIC_SCALE and (i == 0 or words[i - 1] not in _NEGATIONS)), None
    )


def parse_linguistic_confidence(text: str) -> float | None:
    """The first term of LINGUISTIC_SCALE in a reply, mapped to its number."""
    term = linguistic_term(text)
    return None if term is None else LINGUISTIC_SCALE[term]


def verbal_confidence(llm: LLM, guidance: Guidance, *, scale: str = "number", max_tokens: int = 6) -> Confidence:
    """Ask, in the guidance's own conversation, how sure the model is (0..10, or a linguistic
    term with scale="linguistic"; prompts `verbal_number`, `verbal_linguistic`)."""
    name = {"number": "verbal_number", "linguistic": "verbal_linguistic"}[scale]
    messages = [*guidance.messages, {"role": "user", "content": load_prompt(name).user}]
    try:
        raw = llm.generate(messages, max_tokens=max_tokens).text
    except VeriragError as e:
        return Confidence(None, "", f"{type(e).__name__}: {e}")
    term = linguistic_term(raw) if scale == "linguistic" else None
    value = parse_number_confidence(raw) if scale == "number" else parse_linguistic_confidence(raw)
    return Confidence(value, raw, None if value is not None else f"unreadable confidence {raw.strip()[:40]!r}", term)


def user_decision(
    llm: LLM, question: str, guidance: Guidance, confidence: Confidence | str, *, max_tokens: int = 32
) -> tuple[str, str | None]:
    """The surrogate user's decision U(x, z, c) (prompt `calibrag_decision`): (text, error)."""
    shown = confidence if isinstance(confidence, str) else confidence.shown()
    messages = load_prompt("calibrag_decision").messages(
        guidance=guidance.text or NO_ANSWER, confidence=shown, question=question
    )
    try:
        text = llm.generate(messages, max_tokens=max_tokens).text.strip()
    except VeriragError as e:
        return "", f"{type(e).__name__}: {e}"
    return text, None if text else "the user model returned an empty decision"


def reformulate_query(llm: LLM, question: str, *, max_tokens: int = 48) -> tuple[str, str | None]:
    """Stage 3: the query rewritten to stress its key content (prompt `calibrag_reformulate`):
    (new query, error). A failed or empty rewrite returns the original query and the error."""
    messages = load_prompt("calibrag_reformulate").messages(question=question)
    try:
        text = llm.generate(messages, max_tokens=max_tokens).text
    except VeriragError as e:
        return question, f"{type(e).__name__}: {e}"
    text = text.strip().splitlines()[0].strip().strip('"') if text.strip() else ""
    text = re.sub(r"^(new )?query:\s*", "", text, flags=re.I)
    return (text, None) if text else (question, "the model returned an empty query")
