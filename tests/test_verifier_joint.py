"""The verifier's joint premises (issue 36, item 1): a claim's closest chunk read together with the
chunk of another passage that holds what it lacks, so support that spans two passages can be seen."""

from __future__ import annotations

import pytest

from verirag.errors import InputError
from verirag.learned.verifier import TrainedVerifier
from verirag.learned.verifier_inputs import Reading, joint_partner, with_joint_premises
from verirag_lab.train.verifier import read_examples, read_groups, train_verifier
from verirag_lab.train.verifier_examples import VerifierExample

THINGS = ["boat", "house", "kite", "lamp", "hat", "car", "bike", "door", "fence", "chair", "cup", "bag"]
OWNERS = ["Anna", "Boris", "Chen", "Dara", "Emil", "Fatima", "Goran", "Hana", "Ivo", "Jun", "Kira", "Luis"]
KEEPERS = ["Mira", "Nils", "Olga", "Pavel", "Quinn", "Rosa", "Sven", "Tara", "Umar", "Vera", "Wim", "Xena"]
COLOURS = ["red", "blue", "green", "yellow", "black", "white"]
FILLER = "The town holds a market every week and the river runs past the old mill near the square."


def reading(chunks: list[str], passage_of: list[int], claim: str) -> Reading:
    return Reading("q", ("s",), (claim,), (0,), tuple(chunks), tuple(passage_of))


def test_the_partner_holds_what_the_lead_lacks_and_comes_from_another_passage():
    claim = "What colour is the kite of Anna? The kite of Anna is red."
    chunks = ["Mira paints everything she keeps red.", "Anna lent her kite to Mira.", "Anna lent her boat to Nils."]
    r = reading(chunks, [0, 1, 2], claim)
    assert joint_partner(claim, r, 0) == 1  # "kite" and "Anna" are what the lead lacks; both are in chunk 1
    joined, cands = with_joint_premises(r, [[0]])
    assert cands == [[0, 3]] and joined.passage_of == (0, 1, 2, 0)
    assert joined.chunks[3] == f"{chunks[0]} {chunks[1]}"  # in passage order
    assert joined.joined == ((0, 1),) and joined.parts(3) == (0, 1) and joined.parts(2) == (2,)
    # one passage: a chunk that does not overlap the lead (its neighbours share words); none: no premise
    one = reading(["a b", "b c", "c d", "d e"], [0, 0, 0, 0], "a e")
    assert joint_partner("a e", one, 0) == 3
    assert with_joint_premises(reading(["a b"], [0], "a"), [[0]])[1] == [[0]]


def two_hop(i: int, variant: str) -> VerifierExample:
    """A colour known only through a keeper: the owner lends the thing to the keeper (hop 1), the
    keeper paints what they keep a colour (hop 2). Supported with both hops; unsupported when the
    first hop names another keeper (the second hop then says nothing about the thing)."""
    thing, owner = THINGS[i % len(THINGS)], OWNERS[(i // len(THINGS)) % len(OWNERS)]
    keeper, other = KEEPERS[i % len(KEEPERS)], KEEPERS[(i + 5) % len(KEEPERS)]
    colour = COLOURS[i % len(COLOURS)]
    lent = keeper if variant == "both" else other
    passages = (f"{owner} lent the {thing} to {lent}. {FILLER}", f"{keeper} paints everything {colour}.", FILLER)
    return VerifierExample(
        f"What colour is the {thing} of {owner}?",
        f"The {thing} of {owner} is {colour}.",
        passages,
        int(variant == "both"),
        "multihop",
        f"toy:{i}",
        source=f"toy-{i}-{variant}",
    )


@pytest.mark.slow  # two small trainings, about a minute on one core
def test_a_joint_reader_learns_support_that_needs_two_passages_where_single_chunks_cannot():
    """Each chunk alone reads the same in a supported and an unsupported example of a question (the
    second hop is identical, the first names someone else): only reading both together can tell."""
    import torch

    torch.set_num_threads(1)
    examples = [two_hop(i // 2, "both" if i % 2 == 0 else "broken") for i in range(72)]
    settings = {"epochs": 4, "val_share": 0.25, "learning_rate": 3e-4, "head_learning_rate": 1e-2, "candidates": 1}
    held_out = {}  # AUROC on the validation questions (whole groups no step trained on)
    for joint in (False, True):
        v = TrainedVerifier(joint=joint, train_layers=2, **settings).fit(examples)
        held_out[joint] = v.metrics_["auroc"]
        if joint:
            s = v.support(examples[0].question, examples[0].answer, examples[0].passages)
            assert "lent" in s.sentences[0].chunk and "paints" in s.sentences[0].chunk  # the joint premise
    # a single chunk reads the same in both variants: chance (up to batch padding); the joint premise separates them
    assert abs(held_out[False] - 0.5) < 0.1 and held_out[True] > 0.9, held_out


def test_excluded_groups_neither_train_nor_validate(tmp_path, monkeypatch):
    from tests.test_verifier_guard import guard_data

    guard_data(tmp_path, monkeypatch)
    groups = tmp_path / "groups.txt"
    groups.write_text("# kept for an evaluation\ntoy:0\n\ntoy:1\n")
    assert read_groups(groups) == {"toy:0", "toy:1"}
    seen = []

    def reader(path):
        seen.append(path)
        return iter([two_hop(i // 2, "both" if i % 2 == 0 else "broken") for i in range(16)])

    kept = read_examples(["x"], read=reader, exclude_groups=read_groups(groups))
    assert len(kept) == 12 and not {e.group for e in kept} & {"toy:0", "toy:1"}
    v = train_verifier("x", read=reader, exclude_groups={"toy:0"}, verifier=TrainedVerifier(epochs=1, val_share=0.3))
    assert v.n_train_ + v.n_val_ == 14
    (tmp_path / "empty.txt").write_text("# nothing\n")
    from verirag.errors import InputError

    with pytest.raises(InputError, match="names no question group"):
        read_groups(tmp_path / "empty.txt")
    with pytest.raises(InputError, match="cannot read"):
        read_groups(tmp_path / "absent.txt")


@pytest.mark.slow  # three small trainings, under a minute on one core
def test_a_warm_start_begins_from_the_saved_verifier_and_saves_its_whole_update(tmp_path):
    """`init_from`: training starts from a saved verifier's layers and head; what is saved is the
    update from the packaged encoder, so the result loads over it like any other verifier."""
    import numpy as np
    import torch

    torch.set_num_threads(1)
    examples = [two_hop(i // 2, "both" if i % 2 == 0 else "broken") for i in range(24)]
    claims = [e.answer for e in examples[:6]]
    chunks = [e.passages[0] for e in examples[:6]]
    first = TrainedVerifier(train_layers=1, compress_rank=4, epochs=1, candidates=1, learning_rate=1e-3)
    first.fit(examples).save(tmp_path / "first")
    first = TrainedVerifier.load(tmp_path / "first")
    # nothing learns (both rates 0): the warm-started verifier is the first one, with two layers saved
    still = TrainedVerifier(
        train_layers=2,
        compress_rank=8,
        epochs=1,
        candidates=1,
        learning_rate=0.0,
        head_learning_rate=0.0,
        init_from=str(tmp_path / "first"),
    ).fit(examples)
    assert still.warm_start_["adapter_sha256"] == first.adapter_sha256_
    still.save(tmp_path / "still")
    again = TrainedVerifier.load(tmp_path / "still")
    assert again.init_from == str(tmp_path / "first")
    want = first._pair_logits(claims, chunks)
    np.testing.assert_allclose(again._pair_logits(claims, chunks), want, atol=2e-2)
    fresh = TrainedVerifier(train_layers=2, compress_rank=8, epochs=1, candidates=1, learning_rate=0.0)
    fresh.fit(examples)  # the same without the warm start: a fresh head, other scores
    assert np.abs(fresh._pair_logits(claims, chunks) - want).max() > 0.1
    with pytest.raises(InputError, match="at least as many"):
        TrainedVerifier(train_layers=1, init_from=str(tmp_path / "still"), epochs=1).fit(examples)
    with pytest.raises(InputError, match="lora_rank"):
        TrainedVerifier(lora_rank=4, init_from=str(tmp_path / "first"))
