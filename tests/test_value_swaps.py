"""Changed-value negatives for training (issue 47, item 4): `verirag train verifier --value-swaps`
adds, for a share of the supported examples, a copy with one number, party or negation changed
against the passages, labelled unsupported, in the same question group."""

from __future__ import annotations

import pytest

pytest.importorskip("verirag_lab")

from verirag.errors import InputError
from verirag_lab.train.value_swaps import KINDS, RECIPE, value_swap_negatives
from verirag_lab.train.verifier_examples import VerifierExample

PASSAGE = (
    "Marie Curie was born in Warsaw in 1867. She shared the 1903 Nobel Prize with Pierre Curie and "
    "Henri Becquerel. She won a second Nobel Prize in 1911."
)


def example(i: int, answer: str, label: int = 1, history: tuple[str, ...] = ()) -> VerifierExample:
    return VerifierExample(
        question="Who was Marie Curie?",
        answer=answer,
        passages=(PASSAGE,),
        label=label,
        recipe="real",
        group=f"nq:{i}",
        source=f"real/nq/{i}",
        history=history,
    )


ANSWERS = [
    "Marie Curie was born in 1867.",
    "She shared the prize with Pierre Curie in 1903.",
    "She was born in Warsaw.",
    "Marie Curie won a second Nobel Prize in 1911.",
    "She shared the 1903 prize with Henri Becquerel.",
    "Curie was a physicist.",
]


def test_every_supported_example_gives_one_changed_negative_in_its_group():
    examples = [example(i, a, history=("User: hi",) if i == 2 else ()) for i, a in enumerate(ANSWERS)]
    negatives = value_swap_negatives(examples, share=1.0)
    assert len(negatives) == len(ANSWERS)  # each answer has at least a negation to make
    by_group = {n.group: n for n in negatives}
    for e in examples:
        n = by_group[e.group]
        assert n.label == 0 and n.recipe == RECIPE and n.answer != e.answer
        assert n.passages == e.passages and n.question == e.question and n.history == e.history
        assert n.source.startswith(e.source + "#value_swap:") and n.source.rsplit(":", 1)[1] in KINDS
    kinds = [n.source.rsplit(":", 1)[1] for n in negatives]
    assert set(kinds) == set(KINDS)  # in turn: no kind left to where it is the only one possible


def test_only_supported_examples_with_passages_are_changed_and_the_share_is_seeded():
    assert value_swap_negatives([example(0, ANSWERS[0], label=0)], share=1.0) == []
    no_passages = VerifierExample("q", ANSWERS[0], (), 1, "real", "nq:9")
    assert value_swap_negatives([no_passages], share=1.0) == []
    many = [example(i, ANSWERS[i % len(ANSWERS)] + f" ({i})") for i in range(200)]
    assert value_swap_negatives(many, share=0.0) == []
    half = value_swap_negatives(many, share=0.5, seed=3)
    assert 60 < len(half) < 140 and half == value_swap_negatives(many, share=0.5, seed=3)
    assert half != value_swap_negatives(many, share=0.5, seed=4)


def test_a_share_outside_zero_to_one_is_refused():
    with pytest.raises(InputError, match="--value-swaps"):
        value_swap_negatives([example(0, ANSWERS[0])], share=1.5)


def test_the_kinds_can_be_narrowed_to_one_and_an_unknown_kind_is_refused():
    examples = [example(i, a) for i, a in enumerate(ANSWERS)]
    parties = value_swap_negatives(examples, share=1.0, kinds=("party",))
    # only the answers naming a party the passages hold (two capitalised words) can be changed that way
    assert {n.source.rsplit(":", 1)[1] for n in parties} == {"party"}
    assert {n.group for n in parties} == {"nq:0", "nq:1", "nq:3", "nq:4"}
    names = ("Marie Curie", "Pierre Curie", "Henri Becquerel", "Nobel Prize")
    for n in parties:  # one name of the passage put in place of another the answer held
        original = ANSWERS[int(n.group.split(":")[1])]
        new = [m for m in names if m in n.answer and m not in original]
        assert len(new) == 1 and new[0] in PASSAGE
    with pytest.raises(InputError, match="--value-swap-kinds"):
        value_swap_negatives(examples, share=1.0, kinds=("date",))
    with pytest.raises(InputError, match="--value-swap-kinds"):
        value_swap_negatives(examples, share=1.0, kinds=())


def test_a_kind_named_twice_is_taken_twice_a_round():
    many = [example(i, ANSWERS[i % 2] + f" ({i})") for i in range(60)]  # both answers hold all three kinds
    kinds = [
        n.source.rsplit(":", 1)[1] for n in value_swap_negatives(many, share=1.0, kinds=("party", "number", "party"))
    ]
    assert kinds[:6] == ["party", "number", "party"] * 2
    assert kinds.count("party") == 2 * kinds.count("number") and "negation" not in kinds
