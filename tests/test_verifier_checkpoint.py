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


def test_a_checkpoint_of_other_settings_or_data_is_not_resumed(tmp_path, monkeypatch):
    monkeypatch.setattr(checkpoint, "CHECKPOINT_SECONDS", 0.0)
    folder = tmp_path / "checkpoint"
    v = toy_verifier(batch_size=4, epochs=1)
    with pytest.raises(Killed):
        v.fit(toy_examples(24), progress=killed_after(v, 1), checkpoint=folder)
    key = lambda v, ex: v._resumable(folder, None, None, None, None).key  # noqa: E731
    a = toy_verifier(batch_size=4, epochs=1)
    a._start_fit(toy_examples(24))
    b = toy_verifier(batch_size=4, epochs=1, learning_rate=1e-4)
    b._start_fit(toy_examples(24))
    c = toy_verifier(batch_size=4, epochs=1)
    c._start_fit(toy_examples(24, start=100))
    d = toy_verifier(batch_size=4, epochs=5, patience=2)  # more epochs: the same run, given more
    d._start_fit(toy_examples(24))
    keys = [key(v, None) for v in (a, b, c, d)]
    assert keys[0] != keys[1] and keys[0] != keys[2] and keys[0] == keys[3]
    assert checkpoint.load_checkpoint(folder, keys[0]) is not None
    assert checkpoint.load_checkpoint(folder, keys[1]) is None and checkpoint.load_checkpoint(folder, keys[2]) is None
