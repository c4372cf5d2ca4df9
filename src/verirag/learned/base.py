"""The one contract of learned parts (scikit-learn's construct / fit / predict, saved as JSON).

Every learned part (threshold controller, conformal trust filter, lookback classifier, the two
forecasters) is a `LearnedPart`:

- constructor arguments are its settings, kept as attributes of the same name (`settings()`);
- `fit(...)` returns self; the fitted state lives in attributes ending in `_`;
- `check_fitted()` raises `NotFittedError` naming the class and the command that fits it; `fitted`
  says whether `fitted_attribute` is set;
- `fingerprints` names what the part was fitted for ({"model": ..., "data": ..., "corpus": ...});
  `provenance` says how (verirag version, time, command, data; free-form, written by `save`);
- `save(path)` writes one JSON through `verirag.jsonio.write_json`:
  {"format": "verirag.learned.<format_name>/2", "provenance", "fingerprints", "settings", "state"}.
  Where it goes: a part with big weights (`folder` set: the cross-encoder) saves a folder and
  the JSON is `path/<folder>`; every other part saves the single file `path`. `load(path)`
  takes the same path, so what `save` wrote is what a user passes back;
- `load(path, expect={"model": fp, ...})` applies the one mismatch rule: an expected fingerprint
  that differs from the saved one REFUSES (InputError naming `fit_command`) when its key is in
  the class's `refuse_on` (the part's outputs depend on it), WARNS when in `warn_on` (only a
  guarantee weakens), and is ignored otherwise or when either side is unknown; a fingerprint the
  part lists under `fingerprints["equivalent"][key]` counts as its own (another set-up shown to give
  the part the same inputs, with the evidence in its provenance: `EQUIVALENT`);
- files of an older format go through `upgrade`, which rewrites them into this layout or fails
  with an InputError naming `fit_command`.
"""

from __future__ import annotations

import inspect
import json
import warnings
from collections.abc import Mapping
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from verirag.errors import InputError, NotFittedError
from verirag.jsonio import write_json

VERSION = 2
# fingerprints["equivalent"]: {key: [fingerprints measured to stand for the saved one]}
EQUIVALENT = "equivalent"


class LearnedPart:
    format_name: ClassVar[str]  # names the format: "verirag.learned.<format_name>/2"
    title: ClassVar[str]  # how messages name it: "trust filter"
    fitted_attribute: ClassVar[str]  # set (not None) once fitted or loaded
    fit_command: ClassVar[str]  # what fits one, for messages: "verirag calibrate-retrieval"
    refuse_on: ClassVar[tuple[str, ...]] = ()
    warn_on: ClassVar[tuple[str, ...]] = ()
    folder: ClassVar[str | None] = None  # saved as a folder holding this JSON file (else one file)
    arrays: ClassVar[tuple[str, ...]] = ()  # fitted attributes restored as float arrays
    runtime: ClassVar[tuple[str, ...]] = ("fingerprints",)  # constructor arguments that are not settings

    def __init__(self, fingerprints: Mapping[str, Any] | None = None):
        self.fingerprints: dict[str, Any] = {k: v for k, v in (fingerprints or {}).items() if v not in (None, "")}
        self.provenance: dict[str, Any] = {}

    # ---- fitted -------------------------------------------------------------------------------
    @classmethod
    def format(cls) -> str:
        return f"verirag.learned.{cls.format_name}/{VERSION}"

    @property
    def fitted(self) -> bool:
        return getattr(self, self.fitted_attribute, None) is not None

    def check_fitted(self) -> None:
        if not self.fitted:
            raise NotFittedError(
                f"{type(self).__name__} is not fitted: call fit() first, or load one made by `{self.fit_command}`"
            )

    # ---- what is saved --------------------------------------------------------------------------
    def settings(self) -> dict[str, Any]:
        """The constructor arguments, read back from the attributes of the same name."""
        params = inspect.signature(type(self).__init__).parameters
        return {
            n: getattr(self, n)
            for n, p in params.items()
            if n != "self" and n not in self.runtime and p.kind is not p.VAR_KEYWORD
        }

    def state(self) -> dict[str, Any]:
        """The fitted state: every public attribute ending in `_`."""
        return {k: v for k, v in vars(self).items() if k.endswith("_") and not k.startswith("_")}

    def restore(self, state: dict[str, Any], path: Path) -> None:
        for k, v in state.items():
            setattr(self, k, np.asarray(v, dtype=np.float64) if k in self.arrays and v is not None else v)

    def save_weights(self, directory: Path) -> None:
        """Folder kinds: write the big arrays (safetensors) beside the JSON."""

    @classmethod
    def json_path(cls, path: str | Path) -> Path:
        return Path(path) / cls.folder if cls.folder else Path(path)

    def save(self, path: str | Path, **provenance: Any) -> Path:
        """Write the part to `path` (a folder for folder kinds, else one JSON file); `provenance`
        adds to what is recorded (command, data, metrics). Returns `path`."""
        from verirag.version import __version__

        self.check_fitted()
        path = Path(path)
        (path if self.folder else path.parent).mkdir(parents=True, exist_ok=True)
        self.provenance = {
            **self.provenance,
            **provenance,
            "verirag": __version__,
            "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        }
        self.save_weights(path)
        write_json(
            self.json_path(path),
            {
                "format": self.format(),
                "provenance": self.provenance,
                "fingerprints": self.fingerprints,
                "settings": self.settings(),
                "state": self.state(),
            },
            indent=1,
        )
        return path

    @classmethod
    def upgrade(cls, d: dict[str, Any], path: Path) -> dict[str, Any]:
        """An older file's content in this layout; parts whose old files still load override it."""
        raise InputError(
            f"{path} is not a {cls.title} of format {cls.format()} (format {d.get('format')!r}); "
            f"make one with `{cls.fit_command}`"
        )

    @classmethod
    def shipped_file(cls, path: Path, option: str) -> Path:
        """`path`, the file of this part shipped in the package, used when a method's `option`
        names none; InputError naming the option and `fit_command` when the installation lacks it."""
        if not path.is_file():
            raise InputError(
                f"this installation of verirag has no {cls.title} ({path}): name one with "
                f"{option}=FILE, made by `{cls.fit_command}`"
            )
        return path

    @classmethod
    def load(cls, path: str | Path, expect: Mapping[str, Any] | None = None, **runtime: Any):
        """The part saved at `path`, checked against `expect` (see the module docstring);
        `runtime` are constructor arguments that are not saved (an LLM, a device)."""
        path = Path(path)
        file = cls.json_path(path)
        remake = f"make a new one with `{cls.fit_command}`"
        try:
            d = json.loads(file.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise InputError(f"no {cls.title} at {path}: make one with `{cls.fit_command}`") from None
        except (OSError, ValueError, RecursionError) as e:  # a file cut short, not JSON, nested too deeply
            raise InputError(f"{file} is not a {cls.title} file ({type(e).__name__}: {e}); {remake}") from None
        if not isinstance(d, dict):
            raise InputError(f"{file} is not a {cls.title} file (a JSON {type(d).__name__}, not an object); {remake}")
        try:
            if d.get("format") != cls.format():
                d = cls.upgrade(d, path)
            part = cls(**d["settings"], **runtime)
            part.restore(d["state"], path)
            part.fingerprints = dict(d.get("fingerprints") or {})
            part.provenance = dict(d.get("provenance") or {})
        except (AttributeError, KeyError, TypeError, ValueError) as e:
            raise InputError(f"{file}: a malformed {cls.title} ({type(e).__name__}: {e}); {remake}") from None
        part.check_expected(expect, where=str(path))
        return part

    # ---- the one mismatch rule ------------------------------------------------------------------
    def mismatches(self, expect: Mapping[str, Any] | None) -> tuple[list[str], list[str]]:
        """(refused, warned): a message per expected fingerprint that differs from the saved one."""
        refused, warned = [], []
        for key, want in (expect or {}).items():
            have = self.fingerprints.get(key)
            if want in (None, "") or have in (None, "") or str(want) in self.accepted(key):
                continue
            msg = f"the {self.title} was fitted for {key} {have!r}, not {want!r}"
            if key in self.refuse_on:
                refused.append(msg)
            elif key in self.warn_on:
                warned.append(msg)
        return refused, warned

    def accepted(self, key: str) -> set[str]:
        """The fingerprints of `key` this part reads as its own: the saved one and its listed equivalents."""
        own = {str(self.fingerprints.get(key))}
        listed = self.fingerprints.get(EQUIVALENT)
        also = listed.get(key) if isinstance(listed, dict) else None
        if not isinstance(also, list):  # none listed, or a malformed entry: no equivalence
            return own
        return own | {f for f in also if isinstance(f, str)}

    def check_expected(self, expect: Mapping[str, Any] | None, where: str = "") -> None:
        """Refuse (InputError) or warn per `refuse_on` / `warn_on`."""
        refused, warned = self.mismatches(expect)
        at = f"{where}: " if where else ""
        if refused:
            raise InputError(
                f"{at}{'; '.join(refused)}: its outputs would mean something else; "
                f"fit one for this set-up with `{self.fit_command}`"
            )
        for msg in warned:
            warnings.warn(
                f"{at}{msg}: its guarantee may not carry over (refit with `{self.fit_command}`)", stacklevel=3
            )
