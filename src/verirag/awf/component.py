"""Component: what every generator, predictor, entailment model and unified method shares, so
that the trace keys of what it computes are derived from what it is.

`options` is recorded after construction from the constructor's own signature (defaults
included, wiring such as the LLM left out), so no class writes its key by hand and two
instances with equal options share their work. `model_fingerprint()` names the weights it runs on.

`identity()` is everything its output depends on: the options (defaults included), the text of
its prompts, the model's fingerprint, and the identities of its parts (a composed method's
generator and predictor, a predictor's entailment model). Its `digest` is the one identity that
trace keys, result-record keys and threshold files name, so a change of a default, a prompt or a
model is never mistaken for work already done.
"""

from __future__ import annotations

import functools
import hashlib
import inspect
import json
from collections.abc import Callable
from typing import Any

from verirag.awf.trace import Trace, quantity_key
from verirag.prompts import PromptTemplate

# Constructor parameters that wire a component to its models; they are named by the fingerprint.
WIRING = frozenset({"self", "llm", "entailment", "generator", "predictor"})


def fingerprint_of(llm) -> str:
    return (getattr(llm, "fingerprint", "") or getattr(llm, "model_id", "")) if llm is not None else ""


class Component:
    kind = "component"
    registry_name = ""
    options: dict[str, Any] = {}
    reads_passages = True  # False for what is computed from the question alone (No Context)

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        init = cls.__dict__.get("__init__")
        if init is None:
            return
        sig = inspect.signature(init)

        @functools.wraps(init)
        def recording_init(self, *args, **kwargs):
            init(self, *args, **kwargs)  # a subclass's wrapper runs after this one, and wins
            bound = sig.bind(self, *args, **kwargs)
            bound.apply_defaults()
            self.options = {
                k: v
                for k, v in bound.arguments.items()
                if k not in WIRING and sig.parameters[k].kind is not inspect.Parameter.VAR_KEYWORD
            }

        cls.__init__ = recording_init

    def model_fingerprint(self) -> str:
        if getattr(self, "llm", None) is not None:
            return fingerprint_of(self.llm)
        entailment = getattr(self, "entailment", None)
        if isinstance(entailment, Component):
            return f"{entailment.registry_name}:{entailment.model_fingerprint()}"
        return ""

    @property
    def display_name(self) -> str:
        return self.registry_name or type(self).__name__

    def identity(self) -> dict[str, Any]:
        """What this component's output depends on (see the module docstring)."""
        prompts, parts = {}, {}
        for attr, value in sorted(vars(self).items()):
            if isinstance(value, PromptTemplate):
                prompts[attr] = value.digest
            elif isinstance(value, Component):
                parts[attr] = value.identity()
        return {
            "component": f"{self.kind}:{self.display_name}",
            "options": self.options,
            "model": self.model_fingerprint(),
            "prompts": prompts,
            "parts": parts,
        }

    def resolved_options(self) -> dict[str, Any]:
        """Its options and its parts' (defaults included), flat: what a user would compare."""
        options = dict(self.options)
        for value in vars(self).values():
            if isinstance(value, Component):
                for k, v in value.resolved_options().items():
                    options.setdefault(k, v)
        return options

    @functools.cached_property
    def digest(self) -> str:
        """12 hex digits naming `identity()`: equal identities, equal digests."""
        return identity_digest(self.identity())

    def stage_text(self, n_passages: int) -> str:
        """What a user is told while this component computes (a spinner names the stage)."""
        if self.kind == "generator":
            if not self.reads_passages:
                return "answering without the passages"
            return f"reading {n_passages} passages and answering ({self.display_name})"
        if self.kind in ("predictor", "entailment"):
            return f"verifying ({self.display_name})"
        return f"answering and verifying ({self.display_name})"

    def quantity_key(self, trace: Trace, part: str = "", **inputs: Any) -> str:
        """The trace key of what this component computes on `trace` (`part` names one of
        several quantities, e.g. "score_ctx"; `inputs` are what else it read, e.g. the answer)."""
        component = f"{self.kind}:{self.display_name}" + (f".{part}" if part else "")
        return quantity_key(
            component,
            model=self.model_fingerprint(),
            identity=self.digest,
            passages=trace.passages if self.reads_passages else (),
            **inputs,
        )

    def compute(self, trace: Trace, compute: Callable[[], Any], part: str = "", **inputs: Any) -> Any:
        """`compute()` through the trace, at most once per key, announced as this component's stage."""
        return trace.get(self.quantity_key(trace, part, **inputs), compute, stage=self.stage_text(len(trace.passages)))


def identity_digest(identity: dict[str, Any]) -> str:
    """The 12 hex digits a component's `digest` gives `identity` (e.g. one with other options)."""
    blob = json.dumps(identity, sort_keys=True, default=str, ensure_ascii=False)
    return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:12]
