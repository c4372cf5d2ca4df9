"""The one config-error layer of the experiment configs (the AwF grid and both studies).

Each config is a pydantic model over `StrictModel` (unknown keys are errors); `validate_config`
checks a YAML mapping against it and turns every problem into one InputError that names its
place and says what the place takes, in the config's own words:
"config.yaml: 2 problem(s): datasets[1].n: must be an integer >= 1, got 0; colour: unknown key (...)".
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TypeVar, get_args

import yaml
from pydantic import BaseModel, ConfigDict, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import InitErrorDetails, PydanticCustomError

from verirag.errors import InputError

M = TypeVar("M", bound=BaseModel)


class StrictModel(BaseModel):
    """A config section: a mapping whose keys are all known."""

    model_config = ConfigDict(extra="forbid")


def fail(problems: list[tuple[tuple, str, Any]]) -> None:
    """Raise [(place, message, value)] as one ValidationError, placed under the field validated."""
    if problems:
        raise ValidationError.from_exception_data(
            "config",
            [
                InitErrorDetails(type=PydanticCustomError("verirag", msg), loc=tuple(loc), input=v)
                for loc, msg, v in problems
            ],
        )


def shown(v: Any) -> str:
    """A value as a message shows it: null, true, 0.5, text 'x', a list [1]."""
    if v is None or isinstance(v, bool):
        return json.dumps(v)
    s = repr(v) if len(repr(v)) <= 60 else repr(v)[:57] + "..."
    if isinstance(v, (int, float)):
        return s
    return f"{ {str: 'text', list: 'a list', dict: 'a mapping'}.get(type(v), type(v).__name__) } {s}"


def listing(names: Any) -> str:
    return ", ".join(sorted(names)) or "none"


def _schema_at(root: type[BaseModel], loc: tuple) -> tuple[type[BaseModel] | None, FieldInfo | None]:
    """The model that holds the last key of `loc`, and that key's field (None where unknown)."""

    def model_in(tp: Any) -> type[BaseModel] | None:
        if isinstance(tp, type) and issubclass(tp, BaseModel):
            return tp
        return next(filter(None, map(model_in, get_args(tp))), None)

    model, parent, info = root, None, None
    for part in (p for p in loc if isinstance(p, str)):
        parent, info = model, model.model_fields.get(part) if model else None
        model = model_in(info.annotation) if info else None
    return parent, info


def _bounds(info: FieldInfo | None) -> str | None:
    """What a bounded number field takes (these schemas bound integers below, numbers on both sides)."""
    b = {
        k: getattr(m, k)
        for m in (info.metadata if info else ())
        for k in ("gt", "ge", "lt", "le")
        if getattr(m, k, None) is not None
    }
    if set(b) == {"ge"}:
        return f"must be an integer >= {b['ge']}"
    if len(b) == 2:
        return (
            f"must be a number in {'(' if 'gt' in b else '['}{b.get('gt', b.get('ge')):g}, "
            f"{b.get('lt', b.get('le')):g}{')' if 'lt' in b else ']'}"
        )
    return None


_SAY = {
    "model_type": "must be a mapping (key: value)",
    "dict_type": "must be a mapping (key: value)",
    "list_type": "must be a non-empty list",
    "string_type": "must be non-empty text",
    "string_too_short": "must be non-empty text",
    "int_type": "must be an integer",
    "int_parsing": "must be an integer",
    "int_from_float": "must be an integer",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "finite_number": "must be a finite number",
}


def _problem(root: type[BaseModel], err: dict[str, Any]) -> str:
    """One pydantic error as "place: message", in the words of the config files."""
    loc, kind, got = err["loc"], err["type"], f", got {shown(err['input'])}"
    if kind == "verirag":
        msg, got = err["msg"], ""
    elif kind == "value_error":
        msg, got = str(err["ctx"]["error"]), ""
    elif kind == "missing":
        msg, got = "is required", ""
    elif kind == "extra_forbidden":
        msg, got = f"unknown key (expected one of: {listing(_schema_at(root, loc)[0].model_fields)})", ""
    elif kind == "invalid_key" or loc[-1:] == ("[key]",):  # a mapping's key that is not text
        loc, msg = loc[:-1] if kind == "invalid_key" else loc[:-2], "keys must be text"
    elif kind == "literal_error":
        msg = "must be one of " + err["ctx"]["expected"].replace("'", "").replace(" or ", ", ")
    else:
        msg = _bounds(_schema_at(root, loc)[1]) or _SAY.get(kind, err["msg"])
    where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in loc)[1:]  # datasets[1].n
    return f"{where or '(top level)'}: {msg}{got}"


def validate_config(model: type[M], raw: Any, source_name: str = "config", context: dict | None = None) -> M:
    """`raw` validated as `model`; one InputError listing every problem with its place otherwise."""
    if not isinstance(raw, dict):
        raise InputError(
            f"{source_name}: the top level must be a mapping of {listing(model.model_fields)}, got {shown(raw)}"
        )
    try:
        return model.model_validate(raw, context=context)
    except ValidationError as e:
        items = [_problem(model, err) for err in e.errors()]
        raise InputError(f"{source_name}: {len(items)} problem(s): " + "; ".join(items)) from None


def read_yaml(path: str | Path) -> Any:
    """A config file's YAML; every way the file can be unreadable is an InputError."""
    p = Path(path)
    try:
        if p.is_dir():
            raise InputError(f"{p} is a directory; give the config's YAML file")
        if not p.is_file():
            raise InputError(f"config file not found: {p}")
        data = p.read_bytes()
    except (OSError, ValueError) as e:
        raise InputError(f"cannot read config {p}: {getattr(e, 'strerror', None) or e}") from None
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as e:
        line = data[: e.start].count(b"\n") + 1
        raise InputError(
            f"{p}: not UTF-8 text (byte {e.start}, line {line}: {data[e.start : e.start + 1]!r}); "
            "save the config as UTF-8"
        ) from None
    try:
        raw = yaml.safe_load(text)
    except (yaml.YAMLError, ValueError, OverflowError, TypeError, RecursionError) as e:  # also 2024-13-45, 10**5000
        raise InputError(
            f"{p}: not valid YAML: {'nested too deeply' if isinstance(e, RecursionError) else e}"
        ) from None
    if raw is None:
        raise InputError(f"{p} is empty; a config names at least datasets, models and methods")
    return raw
