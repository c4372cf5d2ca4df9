"""`doc_claims`: claims about documentation paragraphs, made without human labels (issue 36,
item 3), from the Debian packages of `doc_corpus` (never a licence text).

Per paragraph one sentence is chosen (6-40 words; drawn with the seed), and the answer is judged
against that paragraph and up to two other paragraphs of the same document (shuffled):
- sentence (1): the sentence itself, asked as "What does the <package> documentation say in
  <document>?";
- cloze (1): "Fill in the blank: <the sentence with a number, date, name or role blanked>",
  answered by the blanked span;
- cloze_swapped (0): the same cloze answered by another span of that kind the SAME document holds;
- number, party (0): the sentence with a number / date / quantity, or a name / party (maintainer,
  user, caller, ...) replaced by another of the same kind that the same document holds;
- negation (0): a negation added ("must" -> "must not", "can" -> "cannot") or removed;
- condition (0): an "if / unless / except / only when / provided that" clause dropped (the
  statement made unconditional).
An item whose perturbation does not apply is a skip line. The record keeps references only:
passage keys ("<package>:<path>#<paragraph>"), character spans and edits, the perturbation, and
`doc` (package, version, path, sha256 prefix of the file), so `resolve` regenerates the text from
the installed file and refuses a changed one.
"""

from __future__ import annotations

import re

from verirag.metrics.qa import normalize_answer
from verirag.retrieval.sentences import sentence_spans
from verirag_lab.train.verifier_labels.context import Item, LabelContext, variant_items
from verirag_lab.train.verifier_labels.records import question_labelled, question_skipped, render
from verirag_lab.train.verifier_labels.sources import Question
from verirag_lab.train.verifier_labels.spans import find_spans, too_close

NAME = "doc_claims"
NEEDS_LLM = False
VERSION = 2  # bumped when what the recipe makes changes: a rerun remakes its items
VARIANTS = ("sentence", "cloze", "cloze_swapped", "number", "party", "negation", "condition")
MIN_SENTENCE_WORDS, MAX_SENTENCE_WORDS, MAX_CLOZE_WORDS = 6, 40, 25
# a cloze is the question: it must leave room for the answer in the verifier's 128-token window
MAX_CLOZE_CHARS = 120
OTHER_PARAGRAPHS = 2
BLANK = "____"
ROLES = (
    "maintainer",
    "maintainers",
    "user",
    "users",
    "administrator",
    "developer",
    "developers",
    "author",
    "upstream",
    "sponsor",
    "uploader",
    "caller",
    "callee",
    "parent",
    "child",
    "sender",
    "receiver",
    "owner",
    "client",
    "server",
    "kernel",
    "process",
    "thread",
    "interpreter",
    "compiler",
)
_ROLE = re.compile(rf"\b(?:{'|'.join(ROLES)})\b", re.IGNORECASE)
_NEG_REMOVE = [
    (re.compile(r"\b(must|should|shall|may|will|can|does|do|did|is|are|was|were|need)( not)\b"), 2, ""),
    (re.compile(r"\b(can)(not)\b"), 2, ""),
    (re.compile(r"\b(does|do|is|are|was|were|should|must)(n't)\b"), 2, ""),
]
_NEG_ADD = re.compile(r"\b(must|should|shall|will|can|is|are|does|do)\b(?! not)(?!n't)")
_CONDITION = re.compile(
    r",?\s+(?:only\s+(?:if|when)|unless|except(?:\s+(?:when|if|that))?|if|provided(?:\s+that)?)\b[^,.;:]*"
)
_NOT_CONDITION = frozenset(
    {"check", "checks", "see", "determine", "test", "tests", "know", "ask", "tell", "decide", "find"}
)
_LEADING_CONDITION = re.compile(r"^(?:Only\s+(?:if|when)|Unless|If|Except\s+(?:when|if))\b[^,]*,\s*")


def plan(q: Question, ctx: LabelContext) -> list[Item]:
    if q.dataset != "docs":
        return []
    return variant_items(NAME, q, ctx, VARIANTS, make)


def choose_sentence(ctx: LabelContext, q: Question) -> tuple[int, int] | None:
    text = ctx.passage(q.dataset, q.id).text
    spans = [
        (s, e)
        for s, e in sentence_spans(text)
        if MIN_SENTENCE_WORDS <= len(text[s:e].split()) <= MAX_SENTENCE_WORDS and text[s:e].rstrip().endswith(".")
    ]
    return ctx.rng(NAME, q.id, "sentence").choice(spans) if spans else None


def passage_keys(ctx: LabelContext, q: Question) -> list[str]:
    source = ctx.sources[q.dataset]
    doc = q.id.rsplit("#", 1)[0]
    others = [k for k in source.files.get(doc, []) if k != q.id]
    rng = ctx.rng(NAME, q.id, "passages")
    keys = [q.id, *rng.sample(others, min(OTHER_PARAGRAPHS, len(others)))]
    rng.shuffle(keys)
    return keys


def doc_spans(ctx: LabelContext, doc: str, kind: str) -> list[tuple[str, int, int, str]]:
    """(key, start, end, text) of every span of `kind` in the document (kind "role": ROLES)."""
    cache = ctx.__dict__.setdefault("_doc_spans", {})
    if (doc, kind) not in cache:
        source = ctx.sources["docs"]
        found = []
        for key in source.files.get(doc, []):
            text = source.passage(key).text
            if kind == "role":
                found += [(key, m.start(), m.end(), m.group(0)) for m in _ROLE.finditer(text)]
            else:
                found += [(key, sp.start, sp.end, sp.text) for sp in find_spans(text, (kind,)) if sp.start > 0]
        cache[(doc, kind)] = found
    return cache[(doc, kind)]


def sentence_targets(sentence: str, kinds: tuple[str, ...]) -> list[tuple[int, int, str, str]]:
    """(start, end, kind, text) of what may be replaced in `sentence` (names not at its start)."""
    out = []
    if "role" in kinds:
        out += [(m.start(), m.end(), "role", m.group(0)) for m in _ROLE.finditer(sentence)]
    out += [(sp.start, sp.end, sp.kind, sp.text) for sp in find_spans(sentence, tuple(k for k in kinds if k != "role"))]
    return [t for t in out if t[0] > 0 or t[2] != "name"]


def replacement(ctx: LabelContext, q: Question, target: tuple[int, int, str, str], rng) -> dict | None:
    """A span of the same kind, elsewhere in the same document, that says something else."""
    _, _, kind, text = target
    doc = q.id.rsplit("#", 1)[0]
    options = {}
    for key, s, e, other in doc_spans(ctx, doc, kind):
        same_case = other[:1].isupper() == text[:1].isupper() or kind != "role"
        if same_case and not too_close(text, other, "number" if kind == "role" else kind):
            options.setdefault(other.lower(), (key, s, e))
    if not options:
        return None
    key, s, e = options[rng.choice(sorted(options))]
    return {"passage_span": ["docs", key, s, e - s]}


def negation_edit(sentence: str) -> tuple[int, int, str, str] | None:
    """(offset, length, replacement, how) of a negation removed, else added."""
    for pattern, group, repl in _NEG_REMOVE:
        m = pattern.search(sentence)
        if m:
            return m.start(group), m.end(group) - m.start(group), repl, "removed"
    m = _NEG_ADD.search(sentence)
    if m:
        if m.group(1) == "can":
            return m.start(1), 3, "cannot", "added"
        return m.end(1), 0, " not", "added"
    return None


def make(ctx: LabelContext, q: Question, item_id: str, variant: str) -> dict:
    chosen = choose_sentence(ctx, q)
    if chosen is None:
        return question_skipped(item_id, NAME, q, "no sentence of 6-40 words")
    start, end = chosen
    paragraph = ctx.passage(q.dataset, q.id).text
    sentence = paragraph[start:end]
    base = {"passage_span": ["docs", q.id, start, end - start]}
    keys = passage_keys(ctx, q)
    rng = ctx.rng(item_id)
    package, path = q.id.rsplit("#", 1)[0].split(":", 1)
    source = ctx.sources["docs"]
    doc = {
        "package": package,
        "version": source.versions.get(package),
        "path": path,
        "sha": source.shas.get(f"{package}:{path}"),
    }
    meta: dict = {"variant": variant}
    question = None
    answer: object = base
    label = 0
    if variant == "sentence":
        label = 1
    elif variant in ("cloze", "cloze_swapped"):
        if len(sentence.split()) > MAX_CLOZE_WORDS or len(sentence) > MAX_CLOZE_CHARS:
            return question_skipped(item_id, NAME, q, "sentence too long for a cloze")
        targets = sentence_targets(sentence, ("number", "year", "date", "role", "name"))
        if not targets:
            return question_skipped(item_id, NAME, q, "nothing to blank")
        target = ctx.rng(NAME, q.id, "cloze").choice(targets)
        s, e, kind, _ = target
        question = {"join": ["Fill in the blank: ", {"edit": base, "offset": s, "length": e - s, "replacement": BLANK}]}
        meta["kind"] = kind
        if variant == "cloze":
            answer, label = {"passage_span": ["docs", q.id, start + s, e - s]}, 1
        else:
            answer = replacement(ctx, q, target, rng)
            if answer is None:
                return question_skipped(item_id, NAME, q, f"no other {kind} in the document")
    elif variant in ("number", "party"):
        kinds = ("number", "year", "date") if variant == "number" else ("role", "name")
        targets = sentence_targets(sentence, kinds)
        rng.shuffle(targets)
        for target in targets:
            spec = replacement(ctx, q, target, rng)
            if spec is not None:
                s, e, kind, _ = target
                answer = {"edit": base, "offset": s, "length": e - s, "replacement": spec}
                meta["kind"] = kind
                break
        else:
            return question_skipped(item_id, NAME, q, f"no {variant} the document holds another of")
    elif variant == "negation":
        edit = negation_edit(sentence)
        if edit is None:
            return question_skipped(item_id, NAME, q, "no negation to add or remove")
        offset, length, repl, how = edit
        answer = {"edit": base, "offset": offset, "length": length, "replacement": repl}
        meta["negation"] = how
    else:  # condition
        m = _LEADING_CONDITION.search(sentence) or _CONDITION.search(sentence)
        before = sentence[: m.start()].split()[-1:] if m is not None else []
        if m is None or (before and before[0].lower() in _NOT_CONDITION):
            return question_skipped(item_id, NAME, q, "no condition to drop")
        answer = {"edit": base, "offset": m.start(), "length": m.end() - m.start(), "replacement": ""}
        if m.start() == 0 and m.end() < len(sentence):
            answer = {"edit": answer, "offset": 0, "length": 1, "replacement": sentence[m.end()].upper()}
        meta["condition"] = m.group(0).strip(" ,").split()[0].lower()
    if not label and variant != "cloze_swapped":
        text = normalize_answer(render(answer, ctx))
        said = {
            normalize_answer(t[a:b]) for t in (ctx.passage("docs", k).text for k in keys) for a, b in sentence_spans(t)
        }
        if not text or text in said:
            return question_skipped(item_id, NAME, q, "the changed claim is a sentence of the passages")
    return question_labelled(item_id, NAME, q, keys, answer, label, meta=meta, extra={"question": question, "doc": doc})
