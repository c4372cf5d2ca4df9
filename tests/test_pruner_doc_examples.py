"""The pruner's documentation windows (issue 48, `pruner_examples.doc_examples`) on a tiny documentation
root written here, and the split that validates them apart from the Wikipedia questions."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from verirag.learned.pruner import validation_stratum
from verirag.learned.splits import split_by_group, split_by_group_within
from verirag_lab.train.pruner_examples import doc_examples, doc_passage, doc_question
from verirag_lab.train.verifier_labels.doc_corpus import load_doc_source

POLICY = """\
Maintainer scripts
==================

The maintainer must keep the package working in three stable releases of the distribution. The user
should never edit files in the package directory without asking the maintainer first.

Packages must not ship files in the local hierarchy reserved for the system administrator. The
maintainer may upload a package only if its tests pass, which takes ten minutes on average.

A package is removed after thirty days unless the maintainer objects to its removal in writing.
"""
MAN_PAGE = """\
.TH FOO 2 2024-01-01
.SH DESCRIPTION
The foo call returns zero when the caller owns the file, and the kernel never copies the file for it.
"""


@pytest.fixture()
def docs(tmp_path, monkeypatch) -> Path:
    root = tmp_path / "docroot"
    sources = root / "usr/share/doc/debian-policy/policy.html/_sources"
    sources.mkdir(parents=True)
    (sources / "ch-scripts.rst.txt").write_text(POLICY, encoding="utf-8")
    man = root / "usr/share/man/man2"
    man.mkdir(parents=True)
    with gzip.open(man / "foo.2.gz", "wt", encoding="utf-8") as f:
        f.write(MAN_PAGE)
    monkeypatch.setenv("VERIRAG_DOC_ROOT", str(root))
    return root


def test_each_drawn_paragraph_asks_about_one_sentence_beside_its_documents_other_paragraphs(docs):
    source = load_doc_source(docs)
    examples = doc_examples(10, seed=0, source=source)
    targets = [e for e in examples if e.source == "docs-target"]
    assert len(targets) == 3  # every policy paragraph; the man page (a dev set) is never drawn
    assert all(
        e.group == "docs:debian-policy:usr/share/doc/debian-policy/policy.html/_sources/ch-scripts.rst.txt"
        for e in examples
    )
    assert not any("foo call" in s for e in examples for s in e.sentences)
    for t in targets:
        asked = " ".join(s for s, y in zip(t.sentences, t.labels) if y)
        assert asked and len(asked.split()) >= 6
        assert t.question.startswith("What does the ch-scripts documentation say about ")
        named = t.question.removesuffix("?").split(" say about ", 1)[1].split()
        assert len(named) >= 2 and all(w in asked for w in named)
    # the paragraph's other sentences are negatives (the last paragraph has only one)
    assert sum(0 in t.labels for t in targets) >= 2
    others = [e for e in examples if e.source == "docs-other"]
    assert others and all(not any(e.labels) for e in others)
    assert doc_examples(10, seed=0, source=source) == examples  # seeded
    assert doc_examples(10, seed=1, source=source) != examples


def test_a_wrapped_paragraph_labels_every_fragment_of_the_asked_sentence(docs):
    paragraph = " ".join(POLICY.split("\n\n")[1].split())
    wrapped = doc_passage(paragraph, True)
    assert "\n" in wrapped and len(wrapped) == len(paragraph) and max(map(len, wrapped.splitlines())) <= 72
    source = load_doc_source(docs)
    examples = [e for seed in range(8) for e in doc_examples(10, seed=seed, source=source) if e.source == "docs-target"]
    fragmented = [e for e in examples if sum(e.labels) > 1]
    assert fragmented, "some seed wraps a paragraph"
    for e in fragmented:
        kept = [s for s, y in zip(e.sentences, e.labels) if y]
        # consecutive fragments, which read together as the asked sentence
        first = e.labels.index(1)
        assert e.labels[first : first + len(kept)] == (1,) * len(kept)
        assert " ".join(kept).rstrip().endswith(".")


def test_a_question_needs_two_content_words():
    import random

    assert doc_question("x", "It is what it is.", random.Random(0)) is None
    q = doc_question("policy", "Maintainers must upload packages weekly.", random.Random(0))
    assert q is not None and q.startswith("What does the policy documentation say about ")


def test_documentation_groups_leave_the_wikipedia_validation_split_as_it_was():
    wiki = [f"nq:{i}" for i in range(60)] + [f"hotpotqa:{i}" for i in range(40)]
    docs = [f"docs:pkg:file{i}" for i in range(30)]
    _, before = split_by_group(wiki, 0.15, 0)
    groups = wiki + docs
    rest, drawn = split_by_group_within(groups, [validation_stratum(g) for g in groups], 0.15, 0)
    assert np.array_equal(drawn[: len(wiki)], before)
    assert drawn[len(wiki) :].sum() == round(0.15 * 30)
    assert np.array_equal(rest, ~drawn)
    # without documentation groups, the split is the plain one
    _, d2 = split_by_group_within(wiki, [validation_stratum(g) for g in wiki], 0.15, 0)
    assert np.array_equal(d2, before)
    # and a plain split over both would have moved Wikipedia questions: why the strata exist
    _, mixed = split_by_group(groups, 0.15, 0)
    assert not np.array_equal(mixed[: len(wiki)], before)
