"""A verifier fit killed part way resumes from its checkpoint folder where it stopped and ends where
an uninterrupted fit ends (same history, same weights); a checkpoint of other data or settings is
not resumed; the folder is gone when the fit ends."""

from __future__ import annotations

import numpy as np
import pytest
from test_learned_verifier import toy_examples, toy_verifier

from verirag.learned import checkpoint


class Killed(Exception):
    pass


def weights(v) -> dict[str, np.ndarray]:
    return {n: p.detach().float().numpy().copy() for n, p in v._scorer.named_parameters() if n in v._trainable}


def killed_after(v, steps: int):
    """A progress callback that stops `v`'s fit after `steps` training steps (the reading's batches
    are counted first)."""

    def progress(done, _total):
        read = getattr(v, "_read_batches", None)
        if read is not None and done >= read + steps:
            raise Killed

    return progress


@pytest.fixture(scope="module")
def uninterrupted():
    import torch

    torch.set_num_threads(1)
    v = toy_verifier(batch_size=4, patience=3)
    return v.fit(toy_examples(24))


def test_a_fit_killed_inside_an_epoch_resumes_and_ends_as_an_uninterrupted_one(uninterrupted, tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoint, "CHECKPOINT_SECONDS", 0.0)  # save after every step
    folder = tmp_path / "checkpoint"
    first = toy_verifier(batch_size=4, patience=3)
    with pytest.raises(Killed):  # inside the second epoch (5 steps an epoch)
        first.fit(toy_examples(24), progress=killed_after(first, 8), checkpoint=folder)
    assert (folder / checkpoint.META_FILE).exists()
    told = []
    resumed = toy_verifier(batch_size=4, patience=3).fit(
        toy_examples(24), checkpoint=folder, on_epoch=lambda e: told.append(e["epoch"])
    )
    assert told == [2, 3]  # the first epoch was not trained again
    assert resumed.history_ == uninterrupted.history_
    assert resumed.best_epoch_ == uninterrupted.best_epoch_
    a, b = weights(resumed), weights(uninterrupted)
    assert a.keys() == b.keys() and all(np.array_equal(a[n], b[n]) for n in a)
    assert resumed.temperature_ == uninterrupted.temperature_
    assert not folder.exists()  # removed when the fit ended


def test_a_checkpoint_of_other_settings_or_data_is_not_resumed(uninterrupted, tmp_path, monkeypatch):
    import dataclasses

    from verirag.learned.verifier_trainer import training_fields_digest

    monkeypatch.setattr(checkpoint, "CHECKPOINT_SECONDS", 0.0)
    folder = tmp_path / "checkpoint"
    v = toy_verifier(batch_size=4, patience=3, learning_rate=1e-4)  # another run's state in the folder
    with pytest.raises(Killed):
        v.fit(toy_examples(24), progress=killed_after(v, 8), checkpoint=folder)

    def key(v, examples):
        return v._resumable(folder, (None, training_fields_digest(examples)), None, None, None).key

    ex = toy_examples(24)
    keys = {}
    for name, settings, data in [
        ("this", {}, ex),
        ("other learning rate", {"learning_rate": 1e-4}, ex),
        ("other data", {}, toy_examples(24, start=100)),
        ("other groups", {}, [dataclasses.replace(e, group=e.group + "x") for e in ex]),
        ("other recipes", {}, [dataclasses.replace(e, recipe="swap") for e in ex]),
        ("more epochs", {"epochs": 5, "patience": 2}, ex),  # the same run, given more
    ]:
        w = toy_verifier(batch_size=4, **settings)
        w._start_fit(data)
        keys[name] = key(w, data)
    assert len({keys[k] for k in keys if k != "more epochs"}) == 5 and keys["more epochs"] == keys["this"]
    assert checkpoint.load_checkpoint(folder, keys["other learning rate"]) is not None
    # the fit this test module's first fixture made, run over the other run's checkpoint: ignored
    told = []
    again = toy_verifier(batch_size=4, patience=3).fit(ex, checkpoint=folder, on_epoch=lambda e: told.append(e))
    assert [e["epoch"] for e in told] == [1, 2, 3] and again.history_ == uninterrupted.history_
