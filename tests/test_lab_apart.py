"""The product and the lab apart (DESIGN.md, "The house"; issue 49, item 6): the product, `verirag`
(src/verirag, its own wheel), never imports the lab, `verirag_lab` (lab/src: experiment grids and
studies, dataset loaders, label recipes, training), neither when imported nor lazily later, and never
reads the benchmark files beside the checkout; its wheel holds no lab module; without the lab, the
lab's doors say how to get it."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "src" / "verirag"
LAB = ("verirag_lab",)
# The one door from the product into the lab: `verirag.evaluate` of an experiment config runs the grid
# (a clear error where the lab is not installed). The CLI's lab commands arrive by entry point, not import.
LAB_DOORS = {"api.py": {"verirag_lab.experiments.evaluate", "verirag_lab.experiments.evaluate.evaluate_config"}}

PROBE = """
import json, sys
seen = []
# every file opened while importing: nothing of the benchmark data may be read
sys.addaudithook(lambda event, args: event == "open" and seen.append(str(args[0])))
import verirag.awf.pipeline, verirag.server.app, verirag.answer_log
import verirag.answer_log.report, verirag.answer_log.summary
import verirag
verirag.evaluate, verirag.Verifier, verirag.fit_threshold, verirag.AnswerSpec  # the Python doors
import verirag.integrations.langchain, verirag.integrations.llamaindex, verirag.client
print(json.dumps({
    "lab": sorted(m for m in sys.modules if m.split(".")[0] == "verirag_lab"),
    "data": sorted({p for p in seen if "shared/data" in p.replace("\\\\", "/")}),
    "files": sorted({getattr(m, "__file__", None) or "" for m in list(sys.modules.values())}),
}))
"""


def test_the_answer_path_service_and_log_verifier_import_no_lab_code():
    out = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, check=True)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got["lab"] == []
    assert got["data"] == []
    assert [f for f in got["files"] if "shared/data" in f.replace("\\", "/")] == []


def _imports(tree: ast.AST) -> list[tuple[int, str]]:
    """Every module an import statement names, top-level or inside a function (a lazy import)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{a.name}") for a in node.names]
    return found


def test_no_product_module_imports_lab_code_even_lazily():
    hits = []
    for path in sorted(SRC.rglob("*.py")):
        for line, name in _imports(ast.parse(path.read_text(encoding="utf-8"))):
            door = name in LAB_DOORS.get(str(path.relative_to(SRC)), set())
            if not door and any(name == lab or name.startswith(lab + ".") for lab in LAB):
                hits.append(f"{path.relative_to(SRC)}:{line}: {name}")
    assert hits == []


def test_the_lab_is_not_in_the_product_package():
    assert [d.name for d in SRC.iterdir() if d.name in ("experiments", "train", "datasets")] == []
    assert (ROOT / "lab" / "src" / "verirag_lab" / "experiments").is_dir()


@pytest.mark.slow
def test_the_product_wheel_holds_no_lab_module(tmp_path):
    """The wheel `pip` builds from the repository's root: the product only."""
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "--no-build-isolation",
            "-q",
            "-w",
            str(tmp_path),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=600,
    )
    (wheel,) = tmp_path.glob("verirag-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "verirag/awf/pipeline.py" in names and "verirag/records.py" in names
    assert [
        n
        for n in names
        if n.startswith("verirag_lab") or n.split("/")[1:2] in (["experiments"], ["train"], ["datasets"])
    ] == []


# Where the lab is not installed: the import system finds no `verirag_lab`.
WITHOUT_LAB = """
import importlib.abc, importlib.metadata, sys
class NoLab(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] == "verirag_lab":
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
sys.meta_path.insert(0, NoLab())
real = importlib.metadata.entry_points
importlib.metadata.entry_points = lambda **kw: [] if kw.get("group") == "verirag.commands" else real(**kw)
"""


def test_without_the_lab_its_doors_say_how_to_install_it(tmp_path):
    config = tmp_path / "grid.yaml"
    config.write_text("datasets: [nq]\n")
    code = (
        WITHOUT_LAB
        + f"""
import verirag
from verirag.cli import main
from verirag.errors import InputError
print("eval exit", main(["eval", {str(config)!r}, "--out", {str(tmp_path / "out")!r}]))
print("ask listed", main(["--help"]))
try:
    verirag.evaluate({str(config)!r}, {str(tmp_path / "out")!r})
except InputError as e:
    print("evaluate:", e)
"""
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, check=True)
    assert "eval exit 2" in done.stdout and "ask listed 0" in done.stdout
    assert "lab is not installed" in done.stderr.replace("\n", " ")
    assert "pip install -e lab" in done.stdout.split("evaluate:", 1)[1]


def test_with_the_lab_its_commands_join_verirag():
    from verirag.cli import app

    names = {c.name for c in app.registered_commands} | {g.name for g in app.registered_groups}
    assert {"eval", "report", "train", "label", "calibrate-retrieval", "ask", "verify", "calibrate"} <= names
