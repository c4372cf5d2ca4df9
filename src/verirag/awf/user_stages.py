"""Stages a user writes: a class in the user's own module, named in the answer spec, that runs
after retrieval (after the trust filter and the forecast rerank, before the built-in stage kinds
of `verirag.awf.stage_kinds`) in
`verirag ask`, the service and the experiment grid, without editing verirag.

    # my_stages.py, anywhere on the Python path
    class DropShortPassages:
        name = "drop_short"                          # its key in the answer's `stages`

        def __init__(self, min_words: int = 5):      # its options
            self.min_words = min_words

        def run(self, question, hits, say):          # hits: ScoredPassage, best first
            kept = [h for h in hits if len(h.passage.text.split()) >= self.min_words]
            return StageResult(kept, {"dropped": [h.passage.id for h in hits if h not in kept]})

    AnswerSpec(stages=[{"use": "my_stages:DropShortPassages", "options": {"min_words": 8}}])
    verirag ask QUESTION --corpus DIR --stage my_stages:DropShortPassages,min_words=8
    stages: [{use: my_stages:DropShortPassages, options: {min_words: 8}}]    # the grid's YAML

The protocol is the built-in stages' (`verirag.awf.stages`): `name`, `run(question, hits, say)`
returning a StageResult (the hits passed on; `info`, what the answer reports under
`stages[name]`; `requery` to ask for one reformulated retrieval). `report(result, got, usage,
record)` is optional. A class may declare its options as a pydantic model `Options` (checked
before the class is built) and a `version` (in the identity: records of another version are
recomputed by the grid). The service takes stages from its own spec only: a client never names
code to import.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
import re
import sys
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from verirag.errors import InputError

_REF = re.compile(r"^[A-Za-z_][\w.]*:[A-Za-z_][\w.]*$")


class StageRef(BaseModel):
    """A user's stage in the spec: `use` ("module:Class") and the options its constructor takes."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    use: str = Field(description="The stage class as module:Class (its module on the Python path).")
    options: dict[str, Any] = Field(default_factory=dict, description="Keyword arguments of the class.")

    @field_validator("use")
    @classmethod
    def _reference(cls, v: str) -> str:
        v = v.strip()
        if not _REF.match(v):
            raise PydanticCustomError("verirag", "must name a class as module:Class, got '{v}'", {"v": v})
        return v

    def __hash__(self) -> int:  # the options are a dict: frozen models hash their fields
        return hash((self.use, json.dumps(self.options, sort_keys=True, default=str)))

    def stage_class(self) -> type:
        return load_stage_class(self.use)

    def checked_options(self) -> dict[str, Any]:
        """The options, checked against the class (its `Options` model when it has one, else its
        constructor's signature) without building it: a bad option fails before anything runs."""
        cls = self.stage_class()
        options = dict(self.options)
        model = getattr(cls, "Options", None)
        if inspect.isclass(model) and issubclass(model, BaseModel):
            unknown = sorted(set(options) - set(model.model_fields))
            if unknown:
                raise InputError(
                    f"stage {self.use}: no option {', '.join(map(repr, unknown))} (it takes {', '.join(model.model_fields) or 'none'})"
                )
            try:
                options = model.model_validate(options).model_dump(include=set(options))
            except ValidationError as e:
                problems = "; ".join(f"{'.'.join(map(str, x['loc']))}: {x['msg']}" for x in e.errors())
                raise InputError(f"stage {self.use}: bad options ({problems})") from None
        try:
            inspect.signature(cls).bind(**options)
        except TypeError as e:
            raise InputError(f"stage {self.use}: its options {options} do not fit it ({e})") from None
        return options

    def build(self) -> Any:
        """The stage object, built from its checked options."""
        return self.stage_class()(**self.checked_options())

    def identity(self) -> dict[str, Any]:
        """What decides what the stage does, as far as verirag can see: class, options, version."""
        return {"use": self.use, "options": self.options, "version": getattr(self.stage_class(), "version", None)}


def load_stage_class(use: str) -> type:
    """The class `use` ("module:Class") names, checked to be a stage; an InputError says what is wrong."""
    module_name, _, attr = use.partition(":")
    try:
        target: Any = _import(module_name)
    except ModuleNotFoundError as e:
        hint = (
            "put it in the current directory or on PYTHONPATH"
            if e.name == module_name.split(".")[0]
            else "install what it imports"
        )
        raise InputError(f"stage {use}: cannot import {module_name!r} ({e}); {hint}") from None
    except Exception as e:  # a syntax error or a failure while the module runs
        raise InputError(f"stage {use}: importing {module_name!r} failed: {type(e).__name__}: {e}") from None
    for part in attr.split("."):
        if not hasattr(target, part):
            raise InputError(f"stage {use}: module {module_name!r} has no {attr!r}")
        target = getattr(target, part)
    if not inspect.isclass(target):
        raise InputError(f"stage {use}: {attr!r} is not a class")
    name = getattr(target, "name", None)
    if not isinstance(name, str) or not name.strip() or not callable(getattr(target, "run", None)):
        raise InputError(
            f"stage {use}: a stage class needs a `name` (text) and a `run(question, hits, say)` method "
            "(`verirag.awf.user_stages`)"
        )
    return target


def _import(module_name: str) -> Any:
    """The module, looked for on the Python path and then, as uvicorn finds an app, in the current
    directory (an installed `verirag` command's path does not hold it)."""
    try:
        return importlib.import_module(module_name)
    except ModuleNotFoundError as e:
        here = os.getcwd()
        if e.name != module_name.split(".")[0] or here in sys.path:
            raise
        sys.path.append(here)
        return importlib.import_module(module_name)


def parse_stage(text: str) -> StageRef:
    """A stage as the command line gives it: `module:Class` or `module:Class,key=value,...`; each
    value is read as JSON where it parses (8, 0.5, true, "x", [1, 2]), else as text."""
    # a comma starts a new option only before `key=`: a value may hold commas ("x=[1, 2]")
    use, *pairs = [p.strip() for p in re.split(r",(?=\s*[A-Za-z_]\w*\s*=)", text)]
    if "," in use:  # something after the class that is no key=value
        raise InputError(f"--stage {text!r}: options are key=value, got {use.partition(',')[2].strip()!r}")
    options: dict[str, Any] = {}
    for pair in pairs:
        key, eq, value = pair.partition("=")
        if not eq or not key.strip():
            raise InputError(f"--stage {text!r}: options are key=value, got {pair!r}")
        try:
            options[key.strip()] = json.loads(value)
        except ValueError:
            options[key.strip()] = value
    try:
        return StageRef(use=use, options=options)
    except ValidationError as e:
        raise InputError(f"--stage {text!r}: {e.errors()[0]['msg']}") from None


def built_in() -> tuple[str, ...]:
    """The built-in stages' names: their results are keyed by name."""
    from verirag.awf.stage_kinds import names

    return ("trust", "forecast", *names())


def check_names(refs: tuple[StageRef, ...] | list[StageRef]) -> None:
    """Each stage's `name` its own: not a built-in stage's, not another user stage's (their
    results and reports are keyed by name)."""
    names = [str(ref.stage_class().name) for ref in refs]
    reserved = built_in()
    taken = sorted({n for n in names if n in reserved})
    if taken:
        raise InputError(f"a stage may not be named {', '.join(map(repr, taken))}: verirag's own stage has that name")
    repeated = sorted({n for n in names if names.count(n) > 1})
    if repeated:
        raise InputError(f"two stages share the name {', '.join(map(repr, repeated))}: give each its own `name`")


class GuardedStage:
    """A user's stage as the pipeline runs it: an exception of its own becomes an InputError that
    names the stage (a clear error in `ask`, an error record in the grid), never a bare traceback."""

    def __init__(self, use: str, stage: Any):
        self.use, self.stage, self.name = use, stage, stage.name

    def run(self, question: str, hits: list, say: Any) -> Any:
        try:
            return self.stage.run(question, hits, say)
        except InputError:
            raise
        except Exception as e:
            raise InputError(f"stage {self.use} failed: {type(e).__name__}: {e}") from e

    def report(self, result: Any, got: Any, usage: Any, record: Any) -> None:
        report(self.stage, result, got, usage, record)


def build_stages(refs: tuple[StageRef, ...] | list[StageRef]) -> list[Any]:
    """The stage objects of `refs`, in order, each guarded (`GuardedStage`); names are checked
    (`check_names`)."""
    check_names(refs)
    return [GuardedStage(ref.use, ref.build()) for ref in refs]


def stages_digest(refs: tuple[StageRef, ...] | list[StageRef]) -> str:
    """The identity of the user's stages in order ("" when there are none: records keep their keys)."""
    if not refs:
        return ""
    text = json.dumps([r.identity() for r in refs], sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def report(stage: Any, result: Any, got: Any, usage: Any, record: Any) -> None:
    """The stage's own `report` when it has one, else its `info` under the answer's `stages[name]`;
    passages it cut (`result.whole`) are kept whole beside them for a corrective second answer."""
    own = getattr(stage, "report", None)
    if callable(own):
        own(result, got, usage, record)
    else:
        record.stages = {**(record.stages or {}), stage.name: result.info}
    if getattr(result, "whole", None) is not None:
        record.whole, record.cut_by = result.whole, stage.name
