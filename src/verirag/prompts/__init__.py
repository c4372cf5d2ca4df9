"""Prompt templates, stored as data files (one YAML per method) so their wording is reviewable."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cache, lru_cache
from importlib import resources
from typing import Any

import yaml

from verirag.errors import InputError


@dataclass(frozen=True)
class PromptTemplate:
    """A system + user template with `{name}` fields; extra keys of the YAML are kept in `extra`."""

    name: str
    user: str
    system: str = ""
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def digest(self) -> str:
        """12 hex digits naming the wording (part of a component's identity)."""
        blob = json.dumps([self.system, self.user, self.extra], sort_keys=True, default=str, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]

    def messages(self, **fields: str) -> list[dict[str, str]]:
        """Chat messages with the fields filled in (`str.format`; braces in values are safe)."""
        msgs = []
        if self.system:
            msgs.append({"role": "system", "content": self.system.format(**fields)})
        msgs.append({"role": "user", "content": self.user.format(**fields)})
        return msgs


# Prompt layouts (issue 9): "paper" is each method's prompt as its paper gives it; "shared" puts one
# system message and the passages first in every prompt that reads them, then the method's own
# instruction and question, so the methods of one example share a token prefix that the llama.cpp
# backend reads once (prefix reuse). A shared template takes `system`, `passage`, `passage_with_title`
# and `separator` from `shared/common.yaml`, and the rest (few-shot examples, reply tokens) from the
# paper template; prompts that read no passages (or one, like the entailment judge, whose premise
# already comes first) have no shared version and load their paper template.
LAYOUTS = ("paper", "shared")
# The default since configs/layout-compare.yaml showed it does not hurt (README, "Which verifier, and
# which layout"): on 30 NQ and 10 HotpotQA questions no accuracy, best-F1 or PR-AUC difference
# favours the paper layout beyond its interval, and it reads about half the tokens.
DEFAULT_LAYOUT = "shared"


def check_layout(layout: str) -> str:
    if layout not in LAYOUTS:
        raise InputError(f"unknown prompt layout {layout!r}; known: {', '.join(LAYOUTS)}")
    return layout


def _read(relative: str) -> dict[str, Any] | None:
    try:
        text = resources.files(__name__).joinpath(relative).read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    return yaml.safe_load(text)


@cache
def load_prompt(name: str, layout: str = "paper") -> PromptTemplate:
    """Load `prompts/<name>.yaml` from the installed package; for layout "shared", overlaid with
    `shared/common.yaml` and `shared/<name>.yaml` where the method has a shared version."""
    data = _read(f"{name}.yaml")
    if data is None:
        raise KeyError(f"no prompt template named {name!r}")
    shared = _read(f"shared/{name}.yaml") if check_layout(layout) == "shared" else None
    if shared is not None:  # paper template < common shared parts < the method's shared template
        data = {**data, **_read("shared/common.yaml"), **shared}
    known = {"name", "user", "system", "source"}
    return PromptTemplate(
        name=data.get("name", name),
        user=data["user"],
        system=data.get("system", ""),
        source=data.get("source", ""),
        extra={k: v for k, v in data.items() if k not in known},
    )
