"""Prompt templates, stored as data files (one YAML per method) so their wording is reviewable."""
from __future__ import annotations

from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from typing import Any

import yaml


@dataclass(frozen=True)
class PromptTemplate:
    """A system + user template with `{name}` fields; extra keys of the YAML are kept in `extra`."""

    name: str
    user: str
    system: str = ""
    source: str = ""
    extra: dict[str, Any] = field(default_factory=dict)

    def messages(self, **fields: str) -> list[dict[str, str]]:
        """Chat messages with the fields filled in (`str.format`; braces in values are safe)."""
        msgs = []
        if self.system:
            msgs.append({"role": "system", "content": self.system.format(**fields)})
        msgs.append({"role": "user", "content": self.user.format(**fields)})
        return msgs


@lru_cache(maxsize=None)
def load_prompt(name: str) -> PromptTemplate:
    """Load `prompts/<name>.yaml` from the installed package."""
    try:
        text = resources.files(__name__).joinpath(f"{name}.yaml").read_text(encoding="utf-8")
    except FileNotFoundError as e:
        raise KeyError(f"no prompt template named {name!r}") from e
    data = yaml.safe_load(text)
    known = {"name", "user", "system", "source"}
    return PromptTemplate(name=data.get("name", name), user=data["user"],
                          system=data.get("system", ""), source=data.get("source", ""),
                          extra={k: v for k, v in data.items() if k not in known})
