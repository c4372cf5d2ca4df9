"""A config's method entries, checked before anything loads: "vanilla+nli", or a mapping {name,
label?, OPTION: VALUE, ...} whose options are those the method's classes take, with values of their
defaults' types and plain data only; an application's method may name a configured method's label.
Every problem is reported with its place relative to the entry (pydantic's ValidationError, as
`verirag_lab.experiments.schema.fail` raises it)."""

from __future__ import annotations

import math
from typing import Any

from pydantic import ValidationInfo

from verirag.awf.spec import MethodSpec, check_name, option_defaults, split_name
from verirag.errors import InputError
from verirag_lab.experiments.schema import fail, listing, shown


def validation_context(info: ValidationInfo) -> dict[str, Any]:
    """What fields validated earlier (models, methods) left for the fields that refer to them."""
    return info.context if isinstance(info.context, dict) else {}


def plain_problem(v: Any, depth: int = 0) -> str | None:
    """Why v is not plain data (text, numbers, true/false, null, lists, mappings with text keys)."""
    if depth > 32:
        return "is nested too deeply (or refers to itself)"
    if isinstance(v, float) and not math.isfinite(v):
        return f"must be a finite number, got {shown(v)}"
    if isinstance(v, dict) and not all(isinstance(k, str) for k in v):
        return "mapping keys must be text"
    if isinstance(v, (list, dict)):
        return next(
            filter(None, (plain_problem(x, depth + 1) for x in (v.values() if isinstance(v, dict) else v))), None
        )
    ok = v is None or isinstance(v, (str, int, float))
    return None if ok else f"must be text, a number, true/false, a list or a mapping, got {shown(v)}"


def method_option_defaults(name: str) -> dict[str, Any]:
    """Option -> its constructor default, for the method `name` (InputError: no such method)."""
    from verirag.awf import registry

    check_name(name)
    unified, gen, pred = split_name(name)
    parts = [("method", unified)] if unified else [("predictor", pred), ("generator", gen)]
    return {k: d for kind, part in parts for k, d in option_defaults(registry.get(kind, part)).items()}


def option_problems(opts: dict[str, Any], defaults: dict[str, Any], unknown: str, takes: str = "it takes") -> None:
    """Fail for options not in `defaults` ("{unknown} 'k' ({takes}: ...)"), and for values whose
    type is not that of the option's default (where it has one)."""

    def wrong(v: Any, d: Any) -> str | None:
        for t, want in ((bool, "true or false"), (int, "an integer"), (float, "a number"), (str, "text")):
            if isinstance(d, t):
                ok = isinstance(v, (int, float) if t is float else t) and (t is bool or not isinstance(v, bool))
                return None if ok else f"must be {want}, got {shown(v)}"
        return None

    fail(
        [((k,), f"{unknown} {k!r} ({takes}: {listing(defaults)})", v) for k, v in opts.items() if k not in defaults]
        + [((k,), p, v) for k, v in opts.items() if k in defaults and (p := wrong(v, defaults[k]))]
    )


def method_entry(entry: Any) -> MethodSpec:
    """A config's method entry as a MethodSpec: "vanilla+nli" or {name, label?, OPTION: VALUE...}.
    Raises ValidationError whose places are relative to the entry (e.g. ("famly",))."""
    if isinstance(entry, MethodSpec):
        return entry
    at = () if isinstance(entry, str) else ("name",)  # where a problem with the name is
    entry = {"name": entry} if isinstance(entry, str) else entry
    if not isinstance(entry, dict):
        fail(
            [
                (
                    (),
                    f"must be a method name or a mapping {{name: METHOD, OPTION: VALUE, ...}}, got {shown(entry)}",
                    entry,
                )
            ]
        )
    name, label = entry.get("name"), entry.get("label")
    opts = {k: v for k, v in entry.items() if k not in ("name", "label")}
    problems = [((str(k),), "option names must be text", v) for k, v in opts.items() if not isinstance(k, str)]
    problems += [((k,), p, v) for k, v in opts.items() if isinstance(k, str) and (p := plain_problem(v))]
    if "name" not in entry:
        problems.append((at, "is required: a method entry is {name: METHOD, OPTION: VALUE, ...}", None))
    elif not isinstance(name, str) or not name.strip():
        problems.append((at, f"must be a method name, got {shown(name)}", name))
    if label is not None and (not isinstance(label, str) or not label.strip()):
        problems.append((("label",), f"must be non-empty text, got {shown(label)}", label))
    fail(problems)
    name = name.strip()
    try:
        defaults = method_option_defaults(name)
    except InputError as e:
        fail([(at, str(e), name)])
    option_problems(opts, defaults, f"method {name!r} takes no option")
    return MethodSpec(name, opts, (label or "").strip())


def application_method(v: Any, info: ValidationInfo) -> MethodSpec:
    """A method entry for an application; the label of a configured method means that method."""
    by_label: dict[str, MethodSpec] = validation_context(info).get("methods_by_label", {})
    if isinstance(v, str) and v.strip() in by_label:
        return by_label[v.strip()]
    spec = method_entry(v)
    if by_label.get(spec.label, spec) != spec:
        fail(
            [
                (
                    ("label",) if isinstance(v, dict) else (),
                    f"label {spec.label!r} is already used by a method "
                    "in `methods` with other options: give this one its own `label`",
                    v,
                )
            ]
        )
    return spec
