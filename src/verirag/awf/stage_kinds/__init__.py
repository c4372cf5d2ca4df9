"""Built-in post-retrieval stages that every door offers, each declared once by a StageKind.

A kind says what a door needs to offer its stage without naming it: the command-line options
(`verirag ask`, `demo`, `serve`: `verirag.cli._shared.with_stage_options` adds them), how their
values become the answer spec's field of the same name, the field an HTTP request may set
(`verirag.server.schemas.AskRequest`), and the line the CLI's result panel prints of the stage's
report (the answer's `stages[name]`). A kind is a module of this package that registers its
StageKind when imported; `kinds()` imports every module here the first time it is asked, so a
new kind is one module and no door names it. A kind's module stays light (no pydantic, no torch at
import): the command line reads the kinds before any command runs.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CliOption:
    """One command-line option of a stage kind: the keyword it reaches the kind's `from_cli` as,
    its flag, its type (bool: a flag without a value), its help and metavar."""

    param: str
    flag: str
    type: Any
    help: str
    metavar: str | None = None


@dataclass(frozen=True)
class StageKind:
    """`name`: the spec field, the HTTP request field and the key of the answer's report;
    `cli`: its command-line options; `from_cli(**values)`: the spec field's value they give (None:
    none was given, the preset's or the service's own setting stands); `http()`: the request
    field's annotation (None allowed: absent) and `http_help` its description; `summary(report)`: the result
    panel's line of the stage's report as (label, plain text), None when there is nothing to say."""

    name: str
    cli: tuple[CliOption, ...]
    from_cli: Callable[..., Any]
    http: Callable[[], Any]
    http_help: str
    summary: Callable[[dict[str, Any]], tuple[str, str] | None]


_KINDS: dict[str, StageKind] = {}
_found = False  # every module of this package imported


def register(kind: StageKind) -> StageKind:
    _KINDS[kind.name] = kind
    return kind


def _discover() -> None:
    import importlib
    import pkgutil

    global _found
    for module in sorted(m.name for m in pkgutil.iter_modules(__path__)):
        importlib.import_module(f"{__name__}.{module}")
    _found = True


def kinds() -> tuple[StageKind, ...]:
    """The built-in kinds (every module of this package, imported once), in the order their stages run."""
    if not _found:
        _discover()
    return tuple(_KINDS.values())


def names() -> tuple[str, ...]:
    return tuple(k.name for k in kinds())
