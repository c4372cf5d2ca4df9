"""Lab and library apart (DESIGN.md, "The house"): the answer path, the service and the log verifier
never import lab code (`verirag.experiments`, `verirag.train`, `verirag.datasets`) and never read the
benchmark files beside the checkout, neither when they are imported nor, by a lazy import, later."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "verirag"
LAB = ("verirag.experiments", "verirag.train", "verirag.datasets")
# What the answer path, the service and the log verifier are built from (everything else of
# src/verirag is lab code or the CLI, which may import anything).
LIBRARY = [
    "answer_log",
    "awf",
    "evaluation",
    "learned",
    "llm",
    "metrics",
    "models",
    "prompts",
    "retrieval",
    "server",
    "integrations",
    "api.py",
    "client.py",
    "contexts.py",
    "conversation.py",
    "errors.py",
    "jsonio.py",
    "limits.py",
    "ray_session.py",
    "settings.py",
    "types.py",
    "version.py",
]
# The one door from the library into the lab: `verirag.evaluate` of an experiment config runs the grid.
LAB_DOORS = {"api.py": {"verirag.experiments.evaluate", "verirag.experiments.evaluate.evaluate_config"}}

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
    "lab": sorted(m for m in sys.modules if m.split(".")[:2] in (["verirag", "experiments"],
                  ["verirag", "train"], ["verirag", "datasets"])),
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


def test_no_library_module_imports_lab_code_even_lazily():
    hits = []
    for entry in LIBRARY:
        for path in sorted((SRC / entry).rglob("*.py")) if (SRC / entry).is_dir() else [SRC / entry]:
            if not path.exists():
                continue
            for line, name in _imports(ast.parse(path.read_text(encoding="utf-8"))):
                door = name in LAB_DOORS.get(str(path.relative_to(SRC)), set())
                if not door and any(name == lab or name.startswith(lab + ".") for lab in LAB):
                    hits.append(f"{path.relative_to(SRC)}:{line}: {name}")
            # relative imports of the lab from inside the package
            text = path.read_text(encoding="utf-8")
            hits += [
                f"{path.relative_to(SRC)}: relative import of {lab}"
                for lab in ("experiments", "train", "datasets")
                if f"from ..{lab}" in text or f"from ...{lab}" in text
            ]
    assert hits == []
