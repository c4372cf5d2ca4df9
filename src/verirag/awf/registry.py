"""Methods registered by name, so the CLI and configs find a class from the name in the paper.

Kinds: "generator" (question + passages -> answer), "entailment" (premise, hypothesis -> P(entailed)),
"predictor" (question, answer, passages -> faithfulness score), "method" (unified methods:
question + passages -> answer and faithfulness indicator together).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

_REGISTRY: dict[str, dict[str, type]] = {"generator": {}, "entailment": {}, "predictor": {}, "method": {}}


def register(kind: str, name: str) -> Callable[[type], type]:
    def deco(cls: type) -> type:
        table = _REGISTRY[kind]
        if name in table and table[name] is not cls:
            raise ValueError(f"{kind} {name!r} is registered twice")
        table[name] = cls
        cls.registry_name = name
        return cls

    return deco


def get(kind: str, name: str) -> type:
    _load_builtin()
    try:
        return _REGISTRY[kind][name]
    except KeyError:
        known = ", ".join(sorted(_REGISTRY.get(kind, {}))) or "none"
        raise KeyError(f"unknown {kind} {name!r}; known: {known}") from None


def names(kind: str) -> list[str]:
    _load_builtin()
    return sorted(_REGISTRY[kind])


def create(kind: str, name: str, *args: Any, **kwargs: Any) -> Any:
    return get(kind, name)(*args, **kwargs)


def _load_builtin() -> None:
    # Importing the packages runs their @register decorators.
    from verirag.awf import entailment, generators, methods, predictors  # noqa: F401
