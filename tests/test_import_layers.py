"""The product's import structure (DESIGN.md: dependencies point one way; issue 49's goal): no
arrow back up between its layers and no circle between its modules other than the method
registry's. Every import counts, lazy ones inside functions too; an import only for type
annotations (under `if TYPE_CHECKING:`) runs nothing and is not counted."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "verirag"

# Each top-level module or package of the product, by layer: an import may point to its own layer
# or below, never above. Within a layer, the module-level circle check below keeps it one way.
LAYERS = [
    {"errors", "types", "metrics", "limits", "jsonio", "version", "settings", "evaluation_data"},
    {"models", "prompts", "conversation", "contexts", "ray_session"},
    {"llm", "retrieval"},
    {"learned"},
    {"awf", "evaluation"},
    {"answer_log", "records", "calibrate_run", "client", "demo"},
    {"server", "integrations", "api", "__init__"},
    {"cli", "__main__"},
]
LAYER = {name: i for i, names in enumerate(LAYERS) for name in names}
# The one circle allowed: the method registry, whose members register themselves when imported and
# which composes methods from them by name.
REGISTRY = "verirag.awf.registry"


def _modules() -> dict[str, Path]:
    found = {}
    for path in SRC.rglob("*.py"):
        parts = path.relative_to(SRC.parent).with_suffix("").parts
        found[".".join(parts[:-1] if path.name == "__init__.py" else parts)] = path
    return found


def _type_checking_blocks(tree: ast.AST) -> set[int]:
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for child in node.body for n in ast.walk(child)}
    return skip


def _imports(name: str, path: Path, modules: dict[str, Path]) -> set[str]:
    """The product modules `name` imports (a package's import of its own members aside)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_blocks(tree)
    package = name if path.name == "__init__.py" else name.rsplit(".", 1)[0]
    found = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            module = ".".join(base + ([node.module] if node.module else []))
            targets = [module] + [f"{module}.{a.name}" for a in node.names]
        else:
            continue
        for target in targets:
            while target and target not in modules:
                target = target.rpartition(".")[0]
            if target and target != name and not name.startswith(target + "."):
                found.add(target)
    return found


def _graph() -> dict[str, set[str]]:
    modules = _modules()
    return {name: _imports(name, path, modules) for name, path in modules.items()}


def _unit(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    sys.setrecursionlimit(max(10_000, sys.getrecursionlimit()))
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_every_product_module_has_a_layer():
    assert sorted({_unit(m) for m in _modules()} - set(LAYER)) == []


def test_no_import_points_up_a_layer():
    up = [
        f"{a} -> {b}" for a, targets in _graph().items() for b in sorted(targets) if LAYER[_unit(b)] > LAYER[_unit(a)]
    ]
    assert up == []


def test_no_circle_but_the_method_registry():
    assert [c for c in _circles(_graph()) if REGISTRY not in c] == []


def test_the_checks_see_a_circle_and_skip_type_only_imports(tmp_path):
    graph = {"verirag.a": {"verirag.b"}, "verirag.b": {"verirag.a"}, "verirag.c": set()}
    assert _circles(graph) == [["verirag.a", "verirag.b"]]
    tree_text = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import verirag.cli\nimport verirag.types\n"
    modules = {"verirag.cli": SRC, "verirag.types": SRC, "verirag.metrics": SRC}
    probe = tmp_path / "metrics.py"
    probe.write_text(tree_text)
    assert _imports("verirag.metrics", probe, modules) == {"verirag.types"}
