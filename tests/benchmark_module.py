"""Load a script of benchmarks/ as a module, for tests of its pure parts."""

from __future__ import annotations

import importlib.util
import os
import sys
from pathlib import Path
from types import ModuleType

BENCHMARKS = Path(__file__).resolve().parents[1] / "benchmarks"
SCRIPTS = BENCHMARKS.parent / "scripts"


def load_script(name: str) -> ModuleType:
    """scripts/NAME.py as the module NAME (as `load_benchmark`)."""
    return load_benchmark(name, SCRIPTS)


def load_benchmark(name: str, folder: Path | None = None) -> ModuleType:
    """benchmarks/NAME.py (or FOLDER/NAME.py) as the module NAME. Registered in `sys.modules`
    (dataclasses look their module up there); the folder is on `sys.path` while it loads, for the
    scripts it imports."""
    folder = folder or BENCHMARKS  # read when called: a test may point BENCHMARKS elsewhere
    spec = importlib.util.spec_from_file_location(name, folder / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    sys.path.insert(0, str(folder))
    before = dict(os.environ)
    try:
        spec.loader.exec_module(module)
    finally:
        sys.path.remove(str(folder))
        changed = sorted(k for k in before.keys() | os.environ.keys() if before.get(k) != os.environ.get(k))
        os.environ.clear()
        os.environ.update(before)
    # a script that sets the environment when imported (the request cache off, say) would change every
    # test that runs after it in the same process: that belongs in its main()
    assert not changed, f"{folder.name}/{name}.py changes the environment when imported: {changed}"
    return module
