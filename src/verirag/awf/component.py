"""Component: what every generator, predictor, entailment model and unified method shares, so
that the trace keys of what it computes are derived from what it is.

`options` is recorded after construction from the constructor's own signature (defaults
included, wiring such as the LLM left out), so no class writes its key by hand and two
instances with equal options share their work. `model_fingerprint()` names the weights it runs on.
"""
from __future__ import annotations

import functools
import inspect
from typing import Any

from verirag.awf.trace import Trace, quantity_key

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
            self.options = {k: v for k, v in bound.arguments.items()
                            if k not in WIRING and sig.parameters[k].kind is not inspect.Parameter.VAR_KEYWORD}

        cls.__init__ = recording_init

    def model_fingerprint(self) -> str:
        if getattr(self, "llm", None) is not None:
            return fingerprint_of(self.llm)
        entailment = getattr(self, "entailment", None)
        if isinstance(entailment, Component):
            return f"{entailment.registry_name}:{entailment.model_fingerprint()}"
        return ""

    def quantity_key(self, trace: Trace, part: str = "", **inputs: Any) -> str:
        """The trace key of what this component computes on `trace` (`part` names one of
        several quantities, e.g. "score_ctx"; `inputs` are what else it read, e.g. the answer)."""
        component = f"{self.kind}:{self.registry_name or type(self).__name__}" + (f".{part}" if part else "")
        return quantity_key(component, model=self.model_fingerprint(), options=self.options,
                            passages=trace.passages if self.reads_passages else (), **inputs)
