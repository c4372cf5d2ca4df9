"""`contrast`: a pairwise term that ranks a supported answer above its changed copy (value swaps),
the two trained in one batch: the copies find their answers, batches keep each pair together and
every example once, the term is what the loss adds, the setting round-trips, and bad settings are
refused."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_learned_verifier import toy_verifier

from verirag.errors import InputError
from verirag.learned.verifier import TrainedVerifier
from verirag_lab.train.value_swaps import value_swap_negatives
from verirag_lab.train.verifier import train_verifier
from verirag_lab.train.verifier_examples import VerifierExample

PEOPLE = ["Anna Berg", "Boris Holt", "Chen Wu", "Dara Quinn", "Emil Sand", "Fatima Noor", "Goran Vuk", "Hana Ito"]
THINGS = ["boat", "house", "kite", "lamp", "hat", "car", "bike", "door"]


def supported(i: int) -> VerifierExample:
    owner, other = PEOPLE[i % len(PEOPLE)], PEOPLE[(i + 3) % len(PEOPLE)]
    thing = THINGS[i % len(THINGS)]
    passage = f"{owner} owns the red {thing}. {other} owns the blue {thing}."
    return VerifierExample(
        f"Who owns the red {thing}?",
        f"{owner} owns the red {thing}.",
        (passage,),
        1,
        "real",
        f"toy:{i}",
        source=f"s{i}",
    )


def examples(n: int = 16) -> list[VerifierExample]:
    base = [supported(i) for i in range(n)]
    return base + value_swap_negatives(base, 1.0, kinds=("party",))


@pytest.fixture(scope="module")
def prepared():
    """A contrast verifier's examples read as `fit` reads them, up to the first step."""
    import torch

    torch.set_num_threads(1)
    ex = examples()
    v = toy_verifier(contrast=2.0, batch_size=4)
    tr, va = v._split(ex, ["toy:0", "toy:1"])
    v._start_fit(ex)
    prep = v._prepare_all(ex, tr, va)
    v._link_pairs(ex, prep, tr)
    states = v._read_frozen(prep, None, 1)
    return v, ex, prep, tr, states


def test_each_copy_finds_the_answer_it_was_changed_from(prepared):
    v, ex, prep, tr, _ = prepared
    copies = [i for i in tr if ex[i].changed_from is not None]
    assert copies and v.contrast_pairs_ == len(copies)  # every training copy: none of the held-out groups
    for i in copies:
        partner = prep[i].partner
        j = next(k for k in tr if prep[k] is partner)
        assert ex[j].label == 1 and ex[j].answer == ex[i].changed_from and ex[j].group == ex[i].group
        assert ex[i].answer != ex[j].answer and ex[i].label == 0
    assert all(prep[i].partner is None for i in tr if ex[i].changed_from is None)


def test_batches_keep_each_pair_together_and_every_example_once(prepared):
    v, _, prep, tr, _ = prepared
    order = [prep[i] for i in np.random.default_rng(3).permutation(tr)]
    batches = v._batches(order)
    seen = [id(p) for b in batches for p in b]
    assert sorted(seen) == sorted(id(p) for p in order)
    for b in batches:
        assert len(b) <= v.batch_size + 1  # one copy an answer here
        ids = {id(p) for p in b}
        assert all(id(p.partner) in ids for p in b if p.partner is not None)
    assert all(len(b) >= v.batch_size for b in batches[:-1])


def test_the_loss_adds_the_weighted_pairwise_term(prepared):
    import torch

    v, _, prep, tr, states = prepared
    batch = v._batches([prep[i] for i in tr])[0]
    v._scorer.eval()  # no dropout: the same logits in both calls
    with torch.no_grad():
        aggregates = v._batch_aggregates(batch, states)
        at = {id(p): k for k, p in enumerate(batch)}
        gaps = [float(aggregates[at[id(p.partner)]][1] - aggregates[k][1]) for k, p in enumerate(batch) if p.partner]
        with_term = float(v._batch_loss(batch, states))
        v.contrast = 0.0
        without = float(v._batch_loss(batch, states))
        v.contrast = 2.0
    assert gaps
    expected = 2.0 * np.mean([math.log1p(math.exp(-g)) for g in gaps])
    assert with_term - without == pytest.approx(expected, rel=1e-4)


def test_the_setting_is_saved_and_a_negative_weight_or_no_copies_refused(tmp_path, monkeypatch):
    monkeypatch.setenv("VERIRAG_DATA_DIR", str(tmp_path / "no-benchmarks"))
    with pytest.raises(InputError, match="contrast"):
        TrainedVerifier(contrast=-1.0)
    labels = tmp_path / "labels.jsonl"
    labels.write_text("", encoding="utf-8")
    with pytest.raises(InputError, match="value_swaps"):
        train_verifier(labels, verifier=toy_verifier(contrast=1.0))
    v = toy_verifier(contrast=1.5, epochs=1, batch_size=4).fit(examples(8), val_groups=["toy:0", "toy:1"])
    assert v.contrast_pairs_ == 6  # the eight answers' copies, less the two held out
    loaded = TrainedVerifier.load(v.save(tmp_path / "v"))
    assert loaded.contrast == 1.5 and loaded.contrast_pairs_ == 6


def test_a_copy_is_linked_only_to_its_own_question_in_a_group_of_several(tmp_path):
    import torch

    torch.set_num_threads(1)
    first = supported(0)
    # the same answer and passages, another question of the same group (a document's questions)
    second = VerifierExample(
        "Whose is the red boat?", first.answer, first.passages, 1, "real", first.group, source="s0b"
    )
    ex = [first, second] + value_swap_negatives([first, second], 1.0, kinds=("party",)) + [supported(1)]
    v = toy_verifier(contrast=1.0, batch_size=2)
    tr, va = v._split(ex, ["toy:1"])
    v._start_fit(ex)
    prep = v._prepare_all(ex, tr, va)
    v._link_pairs(ex, prep, tr)
    assert v.contrast_pairs_ == 2
    assert prep[2].partner is prep[0] and prep[3].partner is prep[1]
