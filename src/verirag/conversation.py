"""The conversation a question was asked in (`history`): what every verify and ask entry point takes.

A follow-up question ("when was the above album released?") only makes sense with the turns before
it. Every entry point takes them as `history`, oldest first, in one of two shapes:

- a list of strings, the earlier turns as the dev rows of TopiOCQA carry them: alternating user and
  agent turns, the user's first (a turn may carry its own "User: " / "Agent: " label);
- a list of OpenAI-style messages ({"role": "user" | "assistant" | "system", "content": ...}, the
  content a string or OpenAI's list of {"type": "text", "text": ...} parts): the user's and the
  assistant's turns become "User: ..." / "Assistant: ..." turns; system (and developer) messages
  instruct a model and are no part of the conversation: they are dropped.

The rules (`as_history`), the same at every entry point:
- anything else (a single string, a number, a turn that is neither a string nor a message, a message
  without a known role or with no text) is an InputError (HTTP 422) naming the turn;
- an empty turn (empty or white space only) is an InputError: a turn is never silently dropped, as
  dropping one would shift the user / agent alternation of the turns after it;
- the documented cut: at most MAX_TURNS most recent turns are kept (an even number of older turns is
  dropped so that the alternation of plain turns stays), and of those at most MAX_HISTORY_WORDS
  words in all, the most recent first (an older turn that does not fit whole is dropped with all
  turns before it; the latest turn alone longer than that keeps its last MAX_HISTORY_WORDS words).
  Each judge may read less (the trained verifier reads only the recent turns that fit its encoder's
  window: `verirag.learned.verifier_inputs.PairReader.claims`).

How a judge reads the question in its context (`in_context`): the question becomes an `InContext`
string, "Conversation so far:\\n<turns, one a line>\\n\\nQuestion: <question>" (the experiment
grid's `Example.question_with_history` wording), so every LLM prompt (the generator's, llm_judge,
nli's hypothesis, self_check's conversation) has the conversation before the question; the string
keeps the bare `question` and the `history`, which the trained verifier reads instead.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from verirag.errors import InputError

MAX_TURNS = 32  # most recent turns kept
MAX_HISTORY_WORDS = 1_000  # words of the kept turns in all, the most recent first
MAX_TURN_CHARS = 20_000  # characters of one turn (the service's limit of a question's text)
SPEAKERS = {"user": "User", "assistant": "Assistant"}
DROPPED_ROLES = ("system", "developer")
_LABEL = re.compile(r"^(user|agent|assistant|system)\s*:\s*", re.IGNORECASE)


def _message_text(m: Mapping[str, Any], where: str) -> str:
    content = m.get("content")
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for p in content:
            if isinstance(p, Mapping) and p.get("type") == "text" and isinstance(p.get("text"), str):
                parts.append(p["text"])
        return "\n".join(parts)
    raise InputError(f"{where}: a message's content is a string or a list of text parts")


def as_history(
    history: Any, *, name: str = "history", max_turns: int = MAX_TURNS, max_words: int = MAX_HISTORY_WORDS
) -> tuple[str, ...]:
    """The turns of `history` (module doc: two shapes, the bad-input rules and the cut), oldest first;
    `max_turns` / `max_words`: the window of the cut (an answer spec's `conversation`)."""
    if history is None:
        return ()
    if isinstance(history, (str, bytes, Mapping)) or not isinstance(history, Sequence):
        raise InputError(
            f"{name} is a list of the earlier turns (strings, or messages with role and content), "
            f"not a {type(history).__name__}"
        )
    turns: list[str] = []
    for i, item in enumerate(history):
        where = f"{name}[{i}]"
        if isinstance(item, str):
            text, own = item, len(item)
        elif isinstance(item, Mapping):
            role = item.get("role")
            if role in DROPPED_ROLES:
                continue
            if role not in SPEAKERS:
                raise InputError(f"{where}: a message's role is user, assistant or system, not {role!r}")
            text = _message_text(item, where)
            own = len(text)  # the limit is the message's own text's, not its speaker label's
            if text.strip():
                text = f"{SPEAKERS[role]}: {text.strip()}"
        else:
            raise InputError(
                f"{where} is a {type(item).__name__}: a turn is a string (or a message with role and content)"
            )
        if "\x00" in text:
            raise InputError(f"{where} contains a NUL character")
        if not text.strip():
            raise InputError(f"{where} is empty: every turn of the history needs text")
        if own > MAX_TURN_CHARS:
            raise InputError(f"{where} has {own} characters: a turn may have at most {MAX_TURN_CHARS}")
        turns.append(" ".join(text.split()))
    return cut(turns, max_turns=max_turns, max_words=max_words)


def cut(turns: Sequence[str], *, max_turns: int = MAX_TURNS, max_words: int = MAX_HISTORY_WORDS) -> tuple[str, ...]:
    """The documented cut (module doc): the most recent `max_turns` turns (an even number of older
    ones dropped), then the most recent turns within `max_words` words."""
    turns = list(turns)
    drop = max(0, len(turns) - max_turns)
    turns = turns[drop + drop % 2 :]
    start, words = len(turns), 0
    while start > 0 and words + len(turns[start - 1].split()) <= max_words:
        start -= 1
        words += len(turns[start].split())
    if start == len(turns):  # the latest turn alone is too long: its last words
        return (" ".join(turns[-1].split()[-max_words:]),) if turns else ()
    if start % 2 and start < len(turns) - 1:  # keep the alternation: drop one more
        start += 1
    return tuple(turns[start:])


def speaker_lines(history: Sequence[str]) -> list[str]:
    """The turns as a model reads them: each with its speaker. Turns without labels (the dev rows'
    plain strings) alternate User / Agent from the first; labelled turns stay as they are."""
    if any(_LABEL.match(t) for t in history):
        return list(history)
    return [f"{'User' if i % 2 == 0 else 'Agent'}: {t}" for i, t in enumerate(history)]


def bare_turns(history: Sequence[str]) -> list[str]:
    """The turns without their speaker labels (what the trained verifier prepends to a claim)."""
    return [_LABEL.sub("", t, count=1) for t in history]


class InContext(str):
    """A question read in its conversation: the string is the conversation and then the question
    (module doc), `question` the bare question, `history` the turns."""

    question: str
    history: tuple[str, ...]

    def __new__(cls, question: str, history: Sequence[str]):
        history = tuple(history)
        text = render(question, history)
        self = super().__new__(cls, text)
        self.question, self.history = question, history
        return self


def render(question: str, history: Sequence[str]) -> str:
    if not history:
        return question
    turns = "\n".join(speaker_lines(history))
    return f"Conversation so far:\n{turns}\n\nQuestion: {question.strip()}"


def in_context(question: str, history: Sequence[str] = ()) -> str:
    """The question as a judge or generator reads it: the bare question without history, else an
    InContext string with the conversation before it."""
    return InContext(question, history) if history else question


def question_and_history(question: str) -> tuple[str, tuple[str, ...]]:
    """(bare question, turns) of a question that may be an InContext string."""
    if isinstance(question, InContext):
        return question.question, question.history
    return question, ()
