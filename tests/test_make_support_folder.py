"""scripts/make_support_folder.sh: the folder the multi-hop labelling source reads. Its files come
from public snapshots at pinned commits (network or MIRRORS), so what runs here is what needs neither:
the refusals that keep a folder holding only the files the loader should read."""

from __future__ import annotations

import subprocess
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "make_support_folder.sh"


def run(*args: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=60)


def test_an_unknown_selection_is_refused(tmp_path):
    done = run(str(tmp_path / "out"), "some")
    assert done.returncode == 2 and "all or ecm, not some" in done.stderr


def test_a_folder_holding_another_file_is_refused_before_anything_is_read(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    # a mirror folder that does not exist: the refusal comes first, so nothing is looked up
    done = run(str(out), "ecm", env={"PATH": "/usr/bin:/bin", "MIRRORS": str(tmp_path / "none")})
    assert done.returncode == 2 and "holds notes.txt, not one of the ecm files" in done.stderr
    assert sorted(p.name for p in out.iterdir()) == ["notes.txt"]
    # the `all` files are not the `ecm` files: a folder made for one is not topped up as the other
    (out / "notes.txt").unlink()
    (out / "rpt-hotpotqa-train.jsonl").write_text("{}")
    done = run(str(out), "ecm", env={"PATH": "/usr/bin:/bin", "MIRRORS": str(tmp_path / "none")})
    assert done.returncode == 2 and "holds rpt-hotpotqa-train.jsonl" in done.stderr


def test_a_copy_that_fails_leaves_no_file_the_loader_would_read(tmp_path):
    out = tmp_path / "out"
    out.mkdir()
    (out / "train.jsonl.part").write_text('{"half": ')  # what a killed run leaves: refused by no check
    done = run(str(out), "ecm", env={"PATH": "/usr/bin:/bin", "MIRRORS": str(tmp_path / "none")})
    assert done.returncode == 1 and "could not read LightChen233/ECM@aac9ae2" in done.stderr
    assert list(out.iterdir()) == []
