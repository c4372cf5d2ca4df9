"""`verirag.learned.checkpoint`: a run's state saved and loaded back, never another run's, never a
half-written one (a run killed while saving)."""

from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from verirag.learned.checkpoint import (  # noqa: E402
    TENSORS_FILE,
    checkpoint_key,
    load_checkpoint,
    optimizer_tensors,
    remove_checkpoint,
    restore_optimizer,
    save_checkpoint,
)


def test_a_checkpoint_loads_back_for_its_own_run_only(tmp_path):
    key = checkpoint_key(data="abc", settings={"lr": 1e-4})
    assert key != checkpoint_key(data="abc", settings={"lr": 2e-4})
    save_checkpoint(tmp_path, key, {"epoch": 2, "losses": [0.5]}, {"w": torch.arange(4.0)})
    meta, tensors = load_checkpoint(tmp_path, key)
    assert meta == {"epoch": 2, "losses": [0.5]} and torch.equal(tensors["w"], torch.arange(4.0))
    assert load_checkpoint(tmp_path, "another run") is None
    assert load_checkpoint(tmp_path / "absent", key) is None


def test_a_checkpoint_left_half_written_is_not_loaded(tmp_path):
    key = checkpoint_key(run=1)
    save_checkpoint(tmp_path, key, {"epoch": 1}, {"w": torch.zeros(2)})
    # killed after the tensors were replaced and before the JSON was: the JSON names other tensors
    save_checkpoint(tmp_path / "newer", key, {"epoch": 2}, {"w": torch.ones(2)})
    (tmp_path / TENSORS_FILE).write_bytes((tmp_path / "newer" / TENSORS_FILE).read_bytes())
    assert load_checkpoint(tmp_path, key) is None
    (tmp_path / "checkpoint.json").write_text("{not json")
    assert load_checkpoint(tmp_path, key) is None
    remove_checkpoint(tmp_path / "newer")
    assert not (tmp_path / "newer").exists()


def test_an_optimizer_state_round_trips(tmp_path):
    w = torch.nn.Parameter(torch.tensor([1.0, -2.0]))
    opt = torch.optim.AdamW([w], lr=0.1)
    for _ in range(3):
        opt.zero_grad()
        (w**2).sum().backward()
        opt.step()
    tensors, rest = optimizer_tensors(opt)
    json.dumps(rest)  # the rest is JSON
    save_checkpoint(tmp_path, "k", {"optimizer": rest}, tensors)
    meta, loaded = load_checkpoint(tmp_path, "k")
    w2 = torch.nn.Parameter(w.detach().clone())
    opt2 = torch.optim.AdamW([w2], lr=0.1)
    restore_optimizer(opt2, loaded, meta["optimizer"])
    for o, p in ((opt, w), (opt2, w2)):
        o.zero_grad()
        (p**2).sum().backward()
        o.step()
    assert torch.allclose(w, w2)
    assert opt2.state_dict()["state"][0]["step"] == opt.state_dict()["state"][0]["step"]
