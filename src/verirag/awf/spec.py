"""MethodSpec: an AwF method is a registered name plus the options that change its output.

    MethodSpec("instructrag", {"family": "multi_hop", "max_tokens": 160})
    MethodSpec.parse({"name": "instructrag", "label": "instructrag-mh", "family": "multi_hop"})
    MethodSpec.parse("vanilla+lookback(classifier=clf.json)")   # options in a name, for --method
    spec.with_defaults({"family": "multi_hop"})   # a dataset's defaults, where the method takes them

Options are routed to the component whose constructor accepts them (a composed method's generator
or predictor, or the unified method), so an option no part of the method takes is a clear error,
not silently ignored. What identifies a built method (its options with their defaults, its
prompts' text, its models) is the method's `digest` (`verirag.awf.component`), not the spec's.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import yaml

from verirag.awf import registry
from verirag.awf.component import WIRING
from verirag.errors import InputError

SEPARATOR = "+"


def split_name(name: str) -> tuple[str | None, str | None, str | None]:
    """(unified, generator, predictor) for a method name; exactly one shape is filled."""
    name = name.strip()
    if SEPARATOR in name:
        gen, _, pred = (s.strip() for s in name.partition(SEPARATOR))
        return None, gen, pred
    if name in registry.names("method"):
        return name, None, None
    return None, name, "trivial"


def option_defaults(cls: type) -> dict[str, Any]:
    """A component class's options (constructor keywords that are not wiring) with their defaults."""
    params = inspect.signature(cls.__init__).parameters.values()
    return {
        p.name: p.default
        for p in params
        if p.name not in WIRING and p.kind in (p.KEYWORD_ONLY, p.POSITIONAL_OR_KEYWORD)
    }


def accepted_options(name: str) -> dict[str, str]:
    """Option name -> the part that takes it ("method", "generator" or "predictor")."""
    unified, gen, pred = split_name(name)
    check_name(name)
    if unified:
        return dict.fromkeys(option_defaults(registry.get("method", unified)), "method")
    out = dict.fromkeys(option_defaults(registry.get("predictor", pred)), "predictor")
    out.update(dict.fromkeys(option_defaults(registry.get("generator", gen)), "generator"))
    return out


def check_name(name: str) -> None:
    """InputError for a name build_method would not know, listing what exists."""
    unified, gen, pred = split_name(name)
    if unified:
        return
    if gen not in registry.names("generator"):
        raise InputError(
            f"unknown method {name!r}: {gen!r} is not a generator; known methods: {', '.join(method_names())}"
        )
    if pred not in registry.names("predictor"):
        raise InputError(
            f"unknown predictor {pred!r} in {name!r}; known predictors: {', '.join(registry.names('predictor'))}"
        )


def method_names() -> list[str]:
    """Every name build_method accepts: unified methods, bare generators, and GEN+PRED pairs
    (but a predictor that continues the conversation after a generator that shows no passages)."""
    gens, preds = registry.names("generator"), registry.names("predictor")
    return (
        registry.names("method")
        + gens
        + [
            f"{g}{SEPARATOR}{p}"
            for g in gens
            for p in preds
            if registry.get("generator", g).reads_passages or not registry.get("predictor", p).continues_generation
        ]
    )


_CALL = re.compile(r"^\s*([^()]+?)\s*\((.*)\)\s*$", re.S)


def parse_call(text: str) -> tuple[str, dict[str, Any]]:
    """ "name(key=value, ...)" -> (name, options); a plain name has no options. Values are read as
    YAML scalars (numbers, true/false, null, text); text needs no quotes unless it holds a comma."""
    m = _CALL.match(text)
    if m is None:
        if "(" in text or ")" in text:
            raise InputError(f"cannot read method {text!r}: write options as NAME(key=value, ...)")
        return text, {}
    options: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in _split_top(m.group(2)))):
        key, eq, value = part.partition("=")
        if not eq or not key.strip().isidentifier():
            raise InputError(f"cannot read option {part!r} of method {text!r}: write key=value")
        try:
            parsed = yaml.safe_load(value) if value.strip() else ""
        except yaml.YAMLError:
            parsed = value.strip()
        options[key.strip()] = (
            parsed if isinstance(parsed, (str, int, float, bool)) or parsed is None else value.strip()
        )
    return m.group(1), options


def _split_top(text: str) -> list[str]:
    """Split at commas outside quotes."""
    parts, cur, quote = [], [], ""
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch == ",":
            parts.append("".join(cur))
            cur = []
            continue
        cur.append(ch)
    parts.append("".join(cur))
    return parts


@dataclass(frozen=True)
class MethodSpec:
    """A method name, its options, and the label records and tables use (default: the name)."""

    name: str
    options: Mapping[str, Any] = field(default_factory=dict)
    label: str = ""

    def __post_init__(self):
        object.__setattr__(self, "name", self.name.strip())
        object.__setattr__(self, "options", dict(self.options))
        object.__setattr__(self, "label", (self.label or self.name).strip())
        accepted = accepted_options(self.name)
        unknown = sorted(set(self.options) - set(accepted))
        if unknown:
            raise InputError(
                f"method {self.name!r} takes no option {', '.join(map(repr, unknown))}; "
                f"it takes: {', '.join(sorted(accepted)) or 'none'}"
            )

    @classmethod
    def parse(cls, entry: str | Mapping[str, Any] | MethodSpec) -> MethodSpec:
        """A config entry: "vanilla+nli", or {name: ..., label: ..., OPTION: VALUE, ...}."""
        if isinstance(entry, MethodSpec):
            return entry
        if isinstance(entry, str):
            name, options = parse_call(entry)
            return cls(name, options)
        if isinstance(entry, Mapping) and isinstance(entry.get("name"), str):
            opts = {k: v for k, v in entry.items() if k not in ("name", "label")}
            return cls(entry["name"], opts, str(entry.get("label") or ""))
        raise InputError(f"a method is a name or a mapping with `name` (and options), got {entry!r}")

    def routed(self) -> dict[str, dict[str, Any]]:
        """The options per part: {"method"|"generator"|"predictor": {option: value}}. An option
        both parts of a composed method take (e.g. `layout`) goes to both."""
        unified, gen, pred = split_name(self.name)
        if unified:
            return {"method": dict(self.options)} if self.options else {}
        takes = {
            "generator": option_defaults(registry.get("generator", gen)),
            "predictor": option_defaults(registry.get("predictor", pred)),
        }
        out: dict[str, dict[str, Any]] = {}
        for k, v in self.options.items():
            for part, keywords in takes.items():
                if k in keywords:
                    out.setdefault(part, {})[k] = v
        return out

    def with_defaults(self, defaults: Mapping[str, Any]) -> MethodSpec:
        """These options over `defaults`, keeping only the defaults this method takes."""
        accepted = accepted_options(self.name)
        merged = {k: v for k, v in defaults.items() if k in accepted}
        merged.update(self.options)
        return MethodSpec(self.name, merged, self.label)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "label": self.label, "options": dict(self.options)}
