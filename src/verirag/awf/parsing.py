"""Robust parsing of the structured outputs of AwF methods.

- InstructRAG and CoT few-shot Hybrid end their rationale with a "Response: <answer>" line;
  `extract_response` finds the last such marker (any case, markdown emphasis such as
  **Response:** or __Response__:, with or without a space after the colon).
- Intrinsic Abstention and CoT few-shot Hybrid abstain with the special string `__DONT_KNOW__`;
  small models write it in many forms (DONT_KNOW, __DONT KNOW__, dont_know, DON'T KNOW, ...),
  which `is_dont_know` recognises.

When the "Response:" marker is missing, the parse is not ok: the answer is the last non-empty
line (so the text is kept, never dropped) and `reason` says what went wrong. `format_error`
decides what that means for the item (see there); either way the item is marked and counted in
every denominator.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["ParsedResponse", "clean_answer", "extract_response", "format_error", "is_dont_know"]

# "Response" as a word (markdown emphasis or heading marks may surround it), then a colon.
_RESPONSE = re.compile(r"(?<![A-Za-z])(?:final\s+)?response[ \t]*[*_]*[ \t]*:", re.IGNORECASE)

# __DONT_KNOW__ and variants: optional underscores, "don't"/"dont"/"do not", space/underscore/hyphen
# between the words. Letters may not touch either side (so "undone known" does not match).
_DONT_KNOW = re.compile(r"(?<![a-z])_*(?:don'?t|do[ _]not)[ \t_-]*know_*(?![a-z])", re.IGNORECASE)

_EDGE_CHARS = " \t*_`\"'“”‘’"


@dataclass(frozen=True)
class ParsedResponse:
    """`answer` is the extracted final answer; `ok` is False when the marker was missing or the
    answer after it was empty (then `reason` says which, and `answer` falls back to the last
    non-empty line of the text)."""

    answer: str
    ok: bool
    reason: str | None = None


def _strip_emphasis(s: str) -> str:
    """Strip markdown emphasis/quotes around an answer, keeping `__DONT_KNOW__` whole."""
    s = s.strip()
    if _DONT_KNOW.fullmatch(s.strip(" \t*`\"'.")):
        return s.strip(" \t*`\"'.")
    s = s.strip(_EDGE_CHARS)
    return s.strip()


def clean_answer(s: str) -> str:
    """An answer line without surrounding markdown, quotes, or a leading list/heading mark."""
    s = s.strip()
    s = re.sub(r"^(?:#+|>|[-•]|\d+[.)])\s+", "", s)
    return _strip_emphasis(s)


def _last_nonempty_line(text: str) -> str:
    for line in reversed(text.splitlines()):
        if line.strip(_EDGE_CHARS):
            return clean_answer(line)
    return ""


def extract_response(text: str | None) -> ParsedResponse:
    """The final answer after the last "Response:" marker of `text`.

    The answer is the rest of the marker's line; if that is empty (the answer was put on the
    next line), the next non-empty line. Markdown emphasis and quotes around it are removed.
    """
    if text is None or not text.strip():
        return ParsedResponse(answer="", ok=False, reason="empty output")
    matches = list(_RESPONSE.finditer(text))
    if not matches:
        return ParsedResponse(answer=_last_nonempty_line(text), ok=False, reason='no "Response:" line')
    rest = text[matches[-1].end() :]
    lines = rest.splitlines() or [""]
    answer = clean_answer(lines[0])
    if not answer:
        for line in lines[1:]:
            answer = clean_answer(line)
            if answer:
                break
    if not answer:
        return ParsedResponse(
            answer=_last_nonempty_line(text[: matches[-1].start()]), ok=False, reason='empty answer after "Response:"'
        )
    return ParsedResponse(answer=answer, ok=True)


def is_dont_know(text: str | None) -> bool:
    """True if `text` abstains with `__DONT_KNOW__` (or a variant such as DONT_KNOW,
    __DONT KNOW__, dont_know, DON'T KNOW).

    If the text has a "Response:" line, only its answer is examined (a rationale may quote the
    token before giving a real answer); otherwise the whole text is.
    """
    if text is None:
        return False
    t = text.replace("\u2019", "'").replace("\u2018", "'")
    if _RESPONSE.search(t):
        parsed = extract_response(t)
        if parsed.ok:
            t = parsed.answer
    return bool(_DONT_KNOW.search(t))


def format_error(
    parsed: ParsedResponse, finish_reason: str, what: str, *, strict: bool = False
) -> tuple[str | None, str | None]:
    """(error, warning) for a reply whose "Response:" line is missing.

    Small models often skip the rationale and answer directly ("The capital is Lima."). When the
    reply ended on its own (not cut by max_tokens) and is not empty, its last line is that direct
    answer: by default it is kept as the answer with a warning (`parse_ok` stays False, so the
    format-following rate can be reported), and the predictors score it like any other answer.
    A reply cut by max_tokens ends mid-rationale, and an empty one has nothing: both are errors.
    `strict=True` makes every missing marker an error (the paper's extraction, literally).
    """
    if parsed.ok:
        return None, None
    message = f"unparseable {what} output: {parsed.reason}"
    if finish_reason == "length":
        return message + " (generation hit max_tokens)", None
    if strict or not parsed.answer.strip():
        return message, None
    return None, f"{parsed.reason}: the reply's last line is taken as a direct answer"
