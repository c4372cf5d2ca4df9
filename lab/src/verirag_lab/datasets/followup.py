"""A question asked as a follow-up in a conversation: the entity it names (a supporting passage's
title) is said in an earlier turn, and the question refers back to it ("When did it come out?").

The rule (shared by the `followup` labelling recipe and the `followup` option of the nq and
hotpotqa loaders, which makes conversational evaluation sets of the default model's own answers):

- the mention of the title in the question (without its disambiguation: "Thriller (album)" ->
  "Thriller"), with a leading "the" or "the <noun>" and a possessive "'s", becomes "that <noun>"
  when the question said the noun, "that album" when the title says the kind, else "it" or "the
  above" (seeded); a possessive becomes "its" / "that album's";
- the earlier turns: "User: Tell me about <title>." and "Agent: <the passage's first sentence, at
  most 40 words>".

A title shorter than 3 characters, or one a reference answer is close to (the history would say the
answer), gives no follow-up.
"""

from __future__ import annotations

import logging
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from verirag.metrics.qa import normalize_answer
from verirag.retrieval.sentences import sentence_spans
from verirag.types import Example, Passage

log = logging.getLogger(__name__)

KIND_WORDS = {
    "album": "album",
    "song": "song",
    "single": "song",
    "film": "film",
    "movie": "film",
    "novel": "novel",
    "book": "book",
    "band": "band",
    "tv series": "series",
    "series": "series",
    "play": "play",
    "video game": "game",
    "musical": "musical",
    "magazine": "magazine",
    "ship": "ship",
}
NOUNS = "song|album|film|movie|band|show|series|book|novel|group|game|play|character|team|company|river|city"
MAX_REPLY_WORDS = 40
TELL = "User: Tell me about "


def bare_title(title: str) -> str:
    """A title without its trailing disambiguation: "Thriller (album)" -> "Thriller"."""
    return re.sub(r"\s*\([^()]*\)\s*$", "", title).strip() or title.strip()


def referring(title: str, rng: random.Random) -> str:
    """ "that album" for "Thriller (album)"; else "it" or "the above"."""
    m = re.search(r"\(([^()]*)\)\s*$", title)
    if m:
        words = m.group(1).lower()
        for key, word in KIND_WORDS.items():
            if words == key or words.endswith(" " + key):
                return f"that {word}"
    return rng.choice(["it", "the above"])


def find_mention(question: str, name: str) -> tuple[int, int, str] | None:
    """(start, end, the noun before it) of `name`'s first mention in `question` ("the song X" ->
    "song"; with a leading "the" and a possessive), or None."""
    m = re.search(
        rf"(?<!\w)(?:(?:the|a)\s+(?P<noun>{NOUNS})\s+|the\s+)?{re.escape(name)}(?:'s|’s)?(?!\w)",
        question,
        re.IGNORECASE,
    )
    return None if m is None else (m.start(), m.end(), (m.group("noun") or "").lower())


def replacement(mention: str, start: int, phrase: str) -> str:
    """What replaces `mention` (at `start` of the question): `phrase`, possessive and capital kept."""
    if mention.endswith(("'s", "’s")):
        phrase = "its" if phrase == "it" else phrase + "'s"
    if start == 0:
        phrase = phrase[:1].upper() + phrase[1:]
    return phrase


def rewrite(question: str, start: int, end: int, phrase: str) -> str:
    """`question` with its mention [start, end) replaced by `phrase` (`replacement`)."""
    return question[:start] + replacement(question[start:end], start, phrase) + question[end:]


def first_sentence_span(text: str) -> tuple[int, int] | None:
    """The span of `text`'s first sentence, cut at MAX_REPLY_WORDS words; None for no sentence."""
    spans = sentence_spans(text)
    if not spans:
        return None
    s, e = spans[0]
    words = text[s:e].split()
    if len(words) > MAX_REPLY_WORDS:
        e = text.index(words[MAX_REPLY_WORDS - 1], s) + len(words[MAX_REPLY_WORDS - 1])
    return s, e


def tell_turn(title: str) -> str:
    stop = "" if title.rstrip()[-1:] in ".?!" else "."
    return f"{TELL}{title}{stop}"


def as_followup(example: Example, entities: Sequence[Passage], rng: random.Random) -> Example | None:
    """`example` asked as a follow-up about the first of `entities` (its supporting passages) whose
    title the question names (module doc), with the earlier turns in `history`; None when none can be."""
    found = []
    for p in entities:
        name = bare_title(p.title or "")
        if len(name) < 3 or any(_close(name, r) for r in example.references):
            continue
        m = find_mention(example.question, name)
        span = first_sentence_span(p.text)
        if m is not None and span is not None:
            found.append((m, p, span))
    if not found:
        return None
    (start, end, noun), p, (s, e) = min(found, key=lambda f: f[0][0])
    phrase = f"that {noun}" if noun else referring(p.title, rng)
    return replace(
        example,
        question=rewrite(example.question, start, end, phrase),
        history=[tell_turn(p.title), f"Agent: {p.text[s:e]}"],
        meta={**example.meta, "followup": {"phrase": phrase, "entity": p.id}},
    )


def followups(
    examples: Sequence[Example], entities_of: Callable[[Example], Sequence[Passage]], dataset: str, seed: int = 0
) -> list[Example]:
    """Each example asked as a follow-up about its entities (`as_followup`); those that cannot be are
    left out and counted in the log. The phrase is drawn per question group, so twins read alike."""
    out = []
    for e in examples:
        f = as_followup(e, entities_of(e), random.Random(f"followup:{seed}:{e.group or e.id}"))
        if f is not None:
            out.append(f)
    if len(out) < len(examples):
        log.warning(
            "%s (followup): %d of %d examples left out: the question names no supporting passage's title",
            dataset,
            len(examples) - len(out),
            len(examples),
        )
    return out


def _close(name: str, reference: str) -> bool:
    """Whether a reference answer is the entity itself, or one holds the other (normalised)."""
    a, b = normalize_answer(name), normalize_answer(reference)
    return bool(a and b and (a == b or a in b or b in a))
