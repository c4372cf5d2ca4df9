"""Labelled sentences for the context pruner, made from the benchmarks without human labels
(issue 37):

- `nq`: each NQ-open oracle question's gold passage (lost-in-the-middle), a sentence labelled 1
  when it holds a reference answer (normalised substring); and one other question's gold passage
  as a random negative (its sentences 1 only where they happen to hold the answer).
- `nq-retrieved` (`retrieved` > 0, in place of the random negative): each NQ question's top BM25 passages from the oracle + HotpotQA
  pool other than its gold one, labelled as above: the hard negatives a RAG pipeline retrieves (the
  same topic and words, mostly no answer), which the benchmark's passages are and the random
  negative is not. A pool passage that is a held-out question's gold passage or a held-out HotpotQA
  question's paragraph is never read.
- `hotpotqa`: each HotpotQA question's supporting-fact sentences labelled 1, the other sentences of
  the same paragraphs 0 (hard negatives: same topic, no support), and `distractors` of the
  question's distractor paragraphs with every sentence 0.
- `docs` (`docs` > 0; issue 48, documents beside Wikipedia): paragraphs of the Debian documentation
  the verifier's `doc_claims` recipe reads, training packages only (never a man page, an Info manual
  or a licence). Per drawn paragraph, one of its sentences is asked about by some of its content
  words ("What does the <document> documentation say about <words>?"); that sentence is labelled 1,
  the paragraph's other sentences and `OTHER_DOC_PARAGRAPHS` other paragraphs of the same document 0
  (same vocabulary, not asked about). Half the paragraphs are hard-wrapped at 72 columns as
  documentation files are, so the pruner also learns line fragments (a licence's sentences, as
  retrieved, are such fragments). A document is one question group, validated apart from the
  Wikipedia questions (`verirag.learned.pruner.validation_stratum`).
- `same-place` (`same_place`; issue 48, what the demo showed): a question that names its passage's
  title (NQ's gold title, a HotpotQA supporting title) is also given another training passage that
  names its own title, with that title replaced by the question's (`transplant`): a passage about
  the question's place that answers nothing (every sentence 0). The shipped pruner kept a demo page
  about the island's seabirds for a question about the island's ferry (its title 0.79; 0.19 once the
  island's name was replaced): every page of a corpus about one place names it, and nothing taught
  the pruner that naming the question's place is not answering it. The donors are training passages
  only. Measured on 2026-12-02 and not kept (data/pruner/candidates/same-place/README.md).

Questions are held out by a hash of their text (`held_out`), so the benchmark of pruning
(benchmarks/bench_prune.py) draws its questions from those the pruner never saw:
`NQ_HELD_OUT` of NQ's and `HOTPOTQA_HELD_OUT` of HotpotQA's (HotpotQA has 600 questions here and
the benchmark needs 200). Training examples pass `verirag_lab.train.guard.TrainingGuard`: an
instruct_qa_human question or a licence text is refused whatever the command line says (the first
shipped pruner read 65 of instruct_qa_human's NQ questions; issue 48).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import random
import re
import textwrap
from pathlib import Path

from verirag.errors import InputError
from verirag.learned.pruner import MIN_TITLE_CHARS, PrunerExample, as_words
from verirag.learned.pruner_inputs import passage_sentences
from verirag.retrieval.sentences import sentence_spans
from verirag_lab.datasets._retrieved import contains_answer
from verirag_lab.datasets.hotpotqa import hotpotqa_files
from verirag_lab.datasets.nq import find_oracle_file, read_oracle
from verirag_lab.train.guard import TrainingGuard
from verirag_lab.train.verifier_labels.doc_corpus import DocSource, load_doc_source
from verirag_lab.train.verifier_labels.heldout import doc_split

NQ_HELD_OUT = 0.2
HOTPOTQA_HELD_OUT = 0.4
OTHER_DOC_PARAGRAPHS = 2
DOC_SENTENCE_WORDS = (6, 40)
DOC_WRAP_SHARE, DOC_WRAP_WIDTH = 0.5, 72
DOC_QUESTION_SHARE = 0.5  # of the asked sentence's content words named in its question
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_+.-]*[A-Za-z0-9]|[A-Za-z]")


def held_out(question: str, share: float) -> bool:
    """Whether `question` is in the held-out share: a stable hash of its normalised text."""
    h = hashlib.sha256(" ".join(question.lower().split()).encode()).hexdigest()
    return int(h[:8], 16) / 2**32 < share


def nq_examples(
    data_dir: str | Path, *, held: bool = False, seed: int = 0, random_negative: bool = True
) -> list[PrunerExample]:
    """NQ's training examples (`held`: the held-out questions' instead, for evaluation), each gold
    passage with one other question's as a random negative unless `random_negative` is False."""
    rows = read_oracle(find_oracle_file(Path(data_dir)))
    rng = random.Random(seed)
    out = []
    for r in rows:
        if held_out(r["question"], NQ_HELD_OUT) != held:
            continue
        group = f"nq:{r['row']}"
        title, text = r["gold"]
        sentences = passage_sentences(text)
        labels = [contains_answer(s, r["answers"]) for s in sentences]
        if not any(labels):  # the answer spans a sentence boundary or is not in the text: no clean label
            continue
        out.append(PrunerExample(r["question"], title, tuple(sentences), tuple(labels), group, "nq-gold"))
        other = rows[rng.randrange(len(rows))]
        if random_negative and other["row"] != r["row"]:
            sentences = passage_sentences(other["gold"][1])
            labels = [contains_answer(s, r["answers"]) for s in sentences]
            out.append(
                PrunerExample(r["question"], other["gold"][0], tuple(sentences), tuple(labels), group, "nq-random")
            )
    return out


def nq_retrieved_examples(data_dir: str | Path, per_question: int, *, k: int = 5) -> list[PrunerExample]:
    """Each training NQ question's top-`k` BM25 passages (the benchmark's retrieval) other than its
    gold passage, at most `per_question` of them, in rank order. Passages of held-out questions (NQ
    gold passages, HotpotQA paragraphs) are skipped, so no benchmark passage is trained on."""
    from verirag_lab.datasets.nq import load_nq

    held_titles = {
        str(t)
        for r in hotpotqa_records(data_dir)
        if held_out(r["question"], HOTPOTQA_HELD_OUT)
        for t, _ in r["context"]
    }
    rows = load_nq(data_dir, k=k, retriever="bm25")
    held_gold = {e.meta["gold_passage_id"] for e in rows if held_out(e.question, NQ_HELD_OUT)}
    # only the questions `nq_examples` labels (an answer in its gold passage): the same questions,
    # so the validation split, drawn by question, is the one the pruner without them draws
    labelled = {e.group for e in nq_examples(data_dir) if e.source == "nq-gold"}
    out = []
    for e in rows:
        if held_out(e.question, NQ_HELD_OUT) or f"nq:{e.id}" not in labelled:
            continue
        others = [
            p
            for p in e.passages
            if p.id != e.meta["gold_passage_id"]
            and p.id not in held_gold
            and not (p.source == "hotpotqa" and p.title in held_titles)
        ]
        for p in others[:per_question]:
            sentences = passage_sentences(p.text)
            labels = [contains_answer(s, e.references) for s in sentences]
            out.append(
                PrunerExample(e.question, p.title, tuple(sentences), tuple(labels), f"nq:{e.id}", "nq-retrieved")
            )
    return out


def _supporting(facts) -> set[tuple[str, int]]:
    """(title, sentence index) pairs of HotpotQA's supporting facts, official ([title, i]) or
    AMOR-style ([title, [i, ...], ...]) records."""
    out = set()
    for f in facts:
        title, idx = f[0], f[1]
        for i in idx if isinstance(idx, list) else [idx]:
            out.add((str(title), int(i)))
    return out


def hotpotqa_records(data_dir: str | Path) -> list[dict]:
    """Raw HotpotQA records (question, answer, context, supporting facts) of the distractor files."""
    records, seen = [], set()
    for f in hotpotqa_files(Path(data_dir) / "hotpotqa_amor_subset"):
        text = f.read_text(encoding="utf-8").strip()
        rows = json.loads(text) if text.startswith("[") else [json.loads(line) for line in text.splitlines() if line]
        for r in rows:
            if r["_id"] not in seen:
                seen.add(r["_id"])
                records.append(r)
    if not records:
        raise InputError(f"no HotpotQA records under {data_dir}")
    return records


def hotpotqa_examples(
    data_dir: str | Path, *, held: bool = False, distractors: int = 2, seed: int = 0
) -> list[PrunerExample]:
    """HotpotQA's training examples (`held`: the held-out questions' instead)."""
    rng = random.Random(seed)
    out = []
    for r in hotpotqa_records(data_dir):
        if held_out(r["question"], HOTPOTQA_HELD_OUT) != held:
            continue
        support = _supporting(r["supporting_facts"])
        gold_titles = {t for t, _ in support}
        paragraphs = [(str(t), [s.strip() for s in ss if s.strip()]) for t, ss in r["context"]]
        others = [p for p in paragraphs if p[0] not in gold_titles]
        chosen = [p for p in paragraphs if p[0] in gold_titles] + rng.sample(others, min(distractors, len(others)))
        for title, sentences in chosen:
            if not sentences:
                continue
            labels = tuple(int((title, i) in support) for i in range(len(sentences)))
            kind = "hotpotqa-support" if title in gold_titles else "hotpotqa-distractor"
            out.append(PrunerExample(r["question"], title, tuple(sentences), labels, f"hotpotqa:{r['_id']}", kind))
    return out


def transplant(text: str, title: str, place: str) -> str | None:
    """`text` with every whole-word mention of `title` (case aside) replaced by `place`; None when it
    names `title` nowhere."""
    pattern = re.compile(r"(?<!\w)" + re.escape(title.strip()) + r"(?!\w)", re.IGNORECASE)
    out, n = pattern.subn(lambda _m: place, text)
    return out if n and title.strip() else None


def names(text: str, title: str) -> bool:
    """Whether `text` names `title` as whole words (case and punctuation aside), a title of at least
    `MIN_TITLE_CHARS` characters."""
    key = as_words(title)
    return len(key.strip()) >= MIN_TITLE_CHARS and key in as_words(text)


def same_place_examples(data_dir: str | Path, *, seed: int = 0) -> list[PrunerExample]:
    """Per training question naming its passage's title, one other training passage moved to that
    title (the module's `same-place`), every sentence 0. The donor is drawn at random from the
    passages of the same dataset's training questions that name their own title (NQ's gold
    passages, HotpotQA's supporting paragraphs): another topic, as a corpus about one place holds.
    Not one of the question's own HotpotQA distractors: they were retrieved for the question, and
    moved to its place they would read as its answer. Only questions `nq_examples` labels, so the
    groups (and the validation split) are theirs."""
    rng = random.Random(f"pruner-same-place:{seed}")
    rows = [r for r in read_oracle(find_oracle_file(Path(data_dir))) if not held_out(r["question"], NQ_HELD_OUT)]
    labelled = {e.group for e in nq_examples(data_dir, random_negative=False)}
    nq = [
        (r["question"], r["gold"][0], f"nq:{r['row']}", "nq-same-place")
        for r in rows
        if f"nq:{r['row']}" in labelled and names(r["question"], r["gold"][0])
    ]
    nq_donors = [(r["gold"][0], passage_sentences(r["gold"][1])) for r in rows]
    hotpotqa, hotpotqa_donors = [], []
    for r in hotpotqa_records(data_dir):
        if held_out(r["question"], HOTPOTQA_HELD_OUT):
            continue
        gold = {t for t, _ in _supporting(r["supporting_facts"])}
        for t, ss in r["context"]:
            if str(t) in gold:
                hotpotqa_donors.append((str(t), [s.strip() for s in ss if s.strip()]))
        hotpotqa += [
            (r["question"], t, f"hotpotqa:{r['_id']}", "hotpotqa-same-place")
            for t in sorted(gold)
            if names(r["question"], t)
        ][:1]
    out = []
    for asked, donors in ((nq, nq_donors), (hotpotqa, hotpotqa_donors)):
        donors = [(t, ss) for t, ss in donors if ss and transplant(" ".join(ss), t, "")]
        for question, place, group, source in asked:
            choices = [(t, ss) for t, ss in donors if as_words(t) != as_words(place)]
            if not choices:
                continue
            title, sentences = choices[rng.randrange(len(choices))]
            moved = tuple(transplant(s, title, place) or s for s in sentences)
            out.append(PrunerExample(question, place, moved, (0,) * len(moved), group, source))
    return out


def doc_question(title: str, sentence: str, rng: random.Random) -> str | None:
    """A question about `sentence` naming some of its content words, in its order (None: too few)."""
    from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS

    words, seen = [], set()
    for w in _WORD.findall(sentence):
        if len(w) >= 3 and w.lower() not in ENGLISH_STOP_WORDS and w.lower() not in seen:
            seen.add(w.lower())
            words.append(w)
    if len(words) < 2:
        return None
    keep = sorted(rng.sample(range(len(words)), max(2, math.ceil(DOC_QUESTION_SHARE * len(words)))))
    return f"What does the {title} documentation say about {' '.join(words[i] for i in keep)}?"


def doc_passage(paragraph: str, wrap: bool) -> str:
    """The paragraph as one line, or hard-wrapped (a line break in place of a space: the same offsets)."""
    flat = " ".join(paragraph.split())
    if not wrap:
        return flat
    wrapped = textwrap.fill(flat, DOC_WRAP_WIDTH, break_long_words=False, break_on_hyphens=False)
    return wrapped if len(wrapped) == len(flat) else flat


def doc_example(question: str, title: str, text: str, target: tuple[int, int] | None, group: str, source: str):
    """`text`'s sentences, labelled 1 where they overlap the `target` span."""
    spans = sentence_spans(text)
    labels = tuple(int(target is not None and s < target[1] and e > target[0]) for s, e in spans)
    return PrunerExample(question, title, tuple(text[s:e] for s, e in spans), labels, group, source)


def doc_examples(n: int, *, seed: int = 0, source: DocSource | None = None) -> list[PrunerExample]:
    """`n` documentation paragraphs' examples (the module's `docs`), drawn with `seed` from the
    training packages' paragraphs that hold a sentence of `DOC_SENTENCE_WORDS` words, the packages
    in turn."""
    source = source or load_doc_source()
    rng = random.Random(f"pruner-docs:{seed}")
    by_package: dict[str, list[str]] = {}
    for k in sorted(k for k in source.passages if doc_split(k) == "train"):
        by_package.setdefault(k.split(":", 1)[0], []).append(k)
    for ks in by_package.values():
        rng.shuffle(ks)
    # the packages taken in turn: python3-doc alone holds most of the paragraphs
    keys = [k for turn in itertools.zip_longest(*by_package.values()) for k in turn if k is not None]
    out, drawn = [], 0
    for key in keys:
        if drawn >= n:
            break
        title, paragraph = source.passages[key]
        wrap = rng.random() < DOC_WRAP_SHARE
        flat = doc_passage(paragraph, False)
        lo, hi = DOC_SENTENCE_WORDS
        # the sentence is chosen in the one-line text: wrapping only breaks it into fragments
        spans = [(s, e) for s, e in sentence_spans(flat) if lo <= len(flat[s:e].split()) <= hi]
        if not spans:
            continue
        target = rng.choice(spans)
        question = doc_question(title, flat[target[0] : target[1]], rng)
        text = doc_passage(paragraph, wrap)
        if question is None:
            continue
        doc = key.rsplit("#", 1)[0]
        group = f"docs:{doc}"
        out.append(doc_example(question, title, text, target, group, "docs-target"))
        others = [k for k in source.files.get(doc, []) if k != key]
        for other in rng.sample(others, min(OTHER_DOC_PARAGRAPHS, len(others))):
            out.append(
                doc_example(question, title, doc_passage(source.passages[other][1], wrap), None, group, "docs-other")
            )
        drawn += 1
    return out


def pruner_examples(
    data_dir: str | Path,
    *,
    held: bool = False,
    seed: int = 0,
    guard: TrainingGuard | None = None,
    retrieved: int = 0,
    docs: int = 0,
    same_place: bool = False,
) -> list[PrunerExample]:
    """The training (or, `held`, the held-out) examples, with `retrieved` BM25 hard negatives per
    NQ training question (`nq_retrieved_examples`) in place of its random negative and `docs`
    documentation paragraphs' examples (`doc_examples`), and with `same_place` the
    `same_place_examples`; training examples pass `guard` (by default
    the data folder's), which counts what it refuses in `guard.refused`."""
    nq = nq_examples(data_dir, held=held, seed=seed, random_negative=held or not retrieved)
    examples = nq + hotpotqa_examples(data_dir, held=held, seed=seed)
    if held:
        return examples
    if retrieved:
        examples += nq_retrieved_examples(data_dir, retrieved)
    if docs:
        examples += doc_examples(docs, seed=seed)
    if same_place:
        examples += same_place_examples(data_dir, seed=seed)
    guard = guard or TrainingGuard.for_data(data_dir)
    return guard.keep(examples, question=guarded_question, texts=guarded_texts)


def guarded_question(e: PrunerExample) -> str:
    return e.question


def guarded_texts(e: PrunerExample) -> tuple[str, ...]:
    return (" ".join(e.sentences),)
