"""What the trained verifier reads: claims (the question with one answer sentence) and passage
chunks sized by the encoder's tokenizer, so that no pair is ever truncated.

A pair is (claim, chunk) in the encoder's window of `window` tokens: the claim's tokens, the
chunk's and the tokenizer's special tokens. Chunks are overlapping word windows
(`verirag.retrieval.chunking.chunk_words`) whose size is the largest number of words such that
EVERY run of that many consecutive words of the passage fits beside the answer's longest claim;
the words' token counts come from the tokenizer itself, so the end of a 5,000-word passage is read
like its beginning. A claim may take at most half the window; a longer sentence is read in word
pieces (each a claim of its own), a longer question is an InputError.

A question asked in a conversation (`history`, `verirag.conversation`) is read with its turns
before it: the claim is "turns question sentence", the turns without speaker labels, oldest first.
Only the last HISTORY_TURNS turns are read (the previous question and its answer: on TopiOCQA's
dev answers the shipped verifier's AUROC was 0.520 without history, 0.530 with every recent turn that
fits, 0.568 with the last two). They get what the claim budget leaves after the question and the
answer's longest sentence, but at least MIN_HISTORY_TOKENS (a longer sentence is then read in
pieces); the most recent turns that fit whole are kept, the turn before them only its first words
that fit, and every older turn is cut (a documented cut: the encoder's window of 128 tokens gives a
claim 62).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from verirag.errors import InputError
from verirag.limits import MAX_ANSWER_CHARS
from verirag.metrics.qa import get_tokens
from verirag.retrieval.chunking import chunk_words
from verirag.retrieval.sentences import split_sentences

# A sentence cut into pieces shares this many words between neighbouring pieces.
PIECE_OVERLAP_WORDS = 4
MIN_CLAIM_ROOM = 8  # tokens of the window an answer's claim needs beside its question
# Tokens the conversation's turns may take of a claim even when the answer's longest sentence would
# leave them less (that sentence is then read in pieces).
MIN_HISTORY_TOKENS = 16
# Turns of a conversation a claim reads at most: the previous question and its answer.
HISTORY_TURNS = 2


def claim_text(question: str, sentence: str, context: str = "") -> str:
    """What the verifier reads of an answer sentence: the conversation's turns (`context`, see
    `PairReader.context`), the question and the sentence."""
    head = f"{context.strip()} {question.strip()}" if context.strip() else question.strip()
    return f"{head} {sentence.strip()}"


def word_token_counts(tokenizer, words: Sequence[str]) -> np.ndarray:
    """Tokens of each whitespace word, as the tokenizer cuts them in running text."""
    if not words:
        return np.zeros(0, dtype=np.int64)
    enc = tokenizer(list(words), is_split_into_words=True, add_special_tokens=False, verbose=False)
    counts = np.zeros(len(words), dtype=np.int64)
    for w in enc.word_ids():
        if w is not None:
            counts[w] += 1
    return counts


def words_that_fit(counts: np.ndarray, budget: int) -> int:
    """The largest W such that every W consecutive words take at most `budget` tokens (at least
    1: a single word longer than the budget is the one case the tokenizer must cut)."""
    n = len(counts)
    if n == 0 or counts.sum() <= budget:
        return max(n, 1)
    cum = np.concatenate([[0], np.cumsum(counts)])

    def fits(w: int) -> bool:
        return bool((cum[w:] - cum[:-w]).max() <= budget)

    lo, hi = 1, n  # fits(lo) is assumed (or nothing fits: 1 word), fits(hi) is False
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (mid, hi) if fits(mid) else (lo, mid)
    return lo


@dataclass(frozen=True)
class Reading:
    """One answer as pairs: `claims[s]` belongs to answer sentence `sentence_of[s]`; `chunks[c]`
    to passage `passage_of[c]`. Every claim is paired with every chunk. `joined[k]`: the two chunks
    that chunk `len(chunks) - len(joined) + k` joins (`with_joint_premises`)."""

    question: str
    sentences: tuple[str, ...]
    claims: tuple[str, ...]
    sentence_of: tuple[int, ...]
    chunks: tuple[str, ...]
    passage_of: tuple[int, ...]
    joined: tuple[tuple[int, int], ...] = ()

    def parts(self, c: int) -> tuple[int, ...]:
        """The chunks of the passages that chunk `c` is: itself, or the two a joint premise joins."""
        first_joined = len(self.chunks) - len(self.joined)
        return self.joined[c - first_joined] if c >= first_joined else (c,)


class PairReader:
    """Cuts (question, answer, passages) into claims and chunks for a tokenizer and window."""

    def __init__(self, tokenizer, window: int, overlap_words: int = 30):
        self.tokenizer = tokenizer
        self.window = int(window)
        self.special = int(tokenizer.num_special_tokens_to_add(pair=True))
        self.overlap_words = overlap_words
        self.claim_budget = (self.window - self.special) // 2

    def n_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False, verbose=False)["input_ids"])

    def context(self, history: Sequence[str], budget: int) -> str:
        """The most recent turns of `history` (at most HISTORY_TURNS, oldest first, speaker labels
        dropped) within `budget` tokens: whole turns from the latest back, then the first words of the turn before
        them that fit; every older turn is cut (module doc)."""
        from verirag.conversation import bare_turns

        kept: list[str] = []
        used = 0
        for turn in reversed(bare_turns(history[-HISTORY_TURNS:])):
            words = turn.split()
            counts = word_token_counts(self.tokenizer, words)
            if used + int(counts.sum()) <= budget:
                kept.append(turn)
                used += int(counts.sum())
                continue
            fit = int(np.searchsorted(np.cumsum(counts), budget - used, side="right"))
            if fit:
                kept.append(" ".join(words[:fit]))
            break
        return " ".join(reversed(kept))

    def question_fits(self, question: str) -> bool:
        """Whether `question` leaves a claim room in the window (`claims` refuses it otherwise)."""
        return self.claim_budget - self.n_tokens(question) >= MIN_CLAIM_ROOM

    def claims(
        self, question: str, answer: str, history: Sequence[str] = ()
    ) -> tuple[list[str], list[str], list[int], str]:
        """(sentences, claims, sentence index of each claim, the turns read before the question)."""
        q_tokens = self.n_tokens(question)
        room = self.claim_budget - q_tokens
        if room < MIN_CLAIM_ROOM:
            raise InputError(
                f"the question takes {q_tokens} tokens: too long for the verifier's window of "
                f"{self.window} tokens (a claim may take {self.claim_budget})"
            )
        sentences = split_sentences(answer)
        context = ""
        if history:
            longest = max((self.n_tokens(s) for s in sentences), default=0)
            context = self.context(history, max(min(MIN_HISTORY_TOKENS, room - 8), room - longest))
            room -= self.n_tokens(context) + 1 if context else 0
        claims, owner = [], []
        for i, s in enumerate(sentences):
            words = s.split()
            counts = word_token_counts(self.tokenizer, words)
            if counts.sum() <= room:
                pieces = [s]
            else:
                w = words_that_fit(counts, room)
                pieces = chunk_words(s, max_words=w, overlap_words=min(PIECE_OVERLAP_WORDS, w - 1))
            claims += [claim_text(question, p, context) for p in pieces]
            owner += [i] * len(pieces)
        return sentences, claims, owner, context

    def chunk(self, passage: str, budget: int) -> list[str]:
        words = passage.split()
        w = words_that_fit(word_token_counts(self.tokenizer, words), budget)
        return chunk_words(passage, max_words=w, overlap_words=min(self.overlap_words, w - 1)) if words else []

    def read(self, question: str, answer: str, passages: Sequence[str], history: Sequence[str] = ()) -> Reading:
        """The answer's claims and the passages' chunks; InputError when there is nothing to read.
        With `history`, the claims read the recent turns before the question (module doc), and
        `Reading.question` is those turns and the question (what the lexical candidates read)."""
        if not (question or "").strip():
            raise InputError("the question is empty")
        if len(answer) > MAX_ANSWER_CHARS:  # refused before it is split: each sentence costs a forward pass
            raise InputError(f"the answer has {len(answer):,} characters: at most {MAX_ANSWER_CHARS:,} are verified")
        sentences, claims, owner, context = self.claims(question, answer, history)
        question = f"{context} {question.strip()}" if context else question
        if not claims:
            raise InputError("the answer has no sentence to verify")
        budget = self.window - self.special - max(self.n_tokens(c) for c in claims)
        chunks, passage_of = [], []
        for i, p in enumerate(passages):
            for c in self.chunk(p or "", budget):
                chunks.append(c)
                passage_of.append(i)
        if not chunks:
            raise InputError("no passage has any text to verify the answer against")
        return Reading(question, tuple(sentences), tuple(claims), tuple(owner), tuple(chunks), tuple(passage_of))


def lexical_candidates(claims: Sequence[str], chunks: Sequence[str], question: str, k: int) -> list[list[int]]:
    """Per claim, the `k` chunks sharing most of its words (the answer sentence's words first, the
    question's second): where its evidence, or its hardest counter-evidence, most likely is."""
    q = set(get_tokens(question))
    chunk_tokens = [set(get_tokens(c)) for c in chunks]
    out = []
    for claim in claims:
        own = set(get_tokens(claim)) - q or set(get_tokens(claim))
        scores = [
            (len(own & ct) / max(len(own), 1) + 0.5 * len(q & ct) / max(len(q), 1), -j)
            for j, ct in enumerate(chunk_tokens)
        ]
        out.append([-j for _, j in sorted(scores, reverse=True)[:k]])
    return out


def joint_partner(claim: str, reading: Reading, lead: int, chunk_words: Sequence[set] | None = None) -> int | None:
    """The chunk read together with a claim's closest chunk `lead` as one premise (multi-hop
    support): of another passage's chunks (another chunk of the same passage, not overlapping it, when
    there is one passage), the one holding most of the claim's words that `lead` lacks (the bridge:
    the question's entity in one passage, the answer in the other), then most of the claim's words;
    None when there is no other chunk. `chunk_words`: each chunk's word set, when already made."""
    if chunk_words is None:
        chunk_words = [set(get_tokens(c)) for c in reading.chunks]
    words = set(get_tokens(claim))
    lead_words = chunk_words[lead]
    missing = words - lead_words
    others = [j for j in range(len(reading.chunks)) if reading.passage_of[j] != reading.passage_of[lead]]
    if not others:  # one passage: its chunks that do not overlap the lead's (neighbours share words)
        others = [j for j in range(len(reading.chunks)) if abs(j - lead) > 1]
    if not others:
        return None

    def score(j: int) -> tuple[float, float, int]:
        ct = chunk_words[j]
        return (len(missing & ct) / max(len(missing), 1), len(words & ct) / max(len(words), 1), -j)

    return max(others, key=score)


def with_joint_premises(reading: Reading, candidates: list[list[int]]) -> tuple[Reading, list[list[int]]]:
    """`reading` with one more chunk per distinct (lead, partner) pair: a claim's first candidate and
    its `joint_partner`, in passage order, joined as one premise (owned by the lead's passage), and each
    claim's candidates with its joint premise added. Such a premise is up to twice a chunk's tokens:
    it is read in a window twice the pair window (`TrainedVerifier.joint`)."""
    chunks, owner = list(reading.chunks), list(reading.passage_of)
    made: dict[tuple[int, int], int] = {}
    out = []
    n = len(reading.chunks)
    words = [set(get_tokens(c)) for c in reading.chunks]  # once per reading, not once per claim
    for claim, cands in zip(reading.claims, candidates):
        lead = cands[0] if cands else None
        partner = joint_partner(claim, reading, lead, words) if lead is not None and lead < n else None
        if partner is None:
            out.append(list(cands))
            continue
        key = (min(lead, partner), max(lead, partner))  # chunk order is passage order
        if key not in made:
            made[key] = len(chunks)
            chunks.append(f"{reading.chunks[key[0]]} {reading.chunks[key[1]]}")
            owner.append(reading.passage_of[lead])
        out.append(list(cands) + [made[key]])
    pairs = tuple(sorted(made, key=made.get))
    joined = Reading(
        reading.question, reading.sentences, reading.claims, reading.sentence_of, tuple(chunks), tuple(owner), pairs
    )
    return joined, out
