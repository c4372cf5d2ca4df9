"""LLMWrapper: the base of every LLM that wraps another (cache, meter, ...).

A wrapper forwards the whole backend interface and overrides only what it changes. Every public
member of `LLM` is forwarded explicitly (so the base class's "cannot do that" defaults never
shadow what the wrapped backend can do), and any other attribute falls through `__getattr__`,
so a capability a backend adds (attention maps, hidden states, KV state) passes through every
wrapper without edits.
"""

from __future__ import annotations

from typing import Any

from verirag.llm.base import LLM, GenerateOptions
from verirag.types import Generation, Prompt

# Attributes a backend sets; a wrapper reads them from the wrapped LLM.
_ATTRIBUTES = ("backend", "model_id", "fingerprint", "capabilities", "context_window", "logprobs_assured")


class LLMWrapper(LLM):
    def __init__(self, inner: LLM):
        self.inner = inner

    def __getattr__(self, name: str) -> Any:
        # Only reached for names not found on the wrapper: backend-specific members.
        if name == "inner":
            raise AttributeError(name)
        return getattr(self.inner, name)

    def require(self, *capabilities: str) -> None:
        LLM.require(self, *capabilities)  # against this wrapper's capabilities, which may be fewer

    def _generate(self, prompt: Prompt, options: GenerateOptions) -> Generation:
        return self.inner.generate(prompt, **options.as_kwargs())  # reached only by a wrapper using LLM.generate

    @property
    def innermost(self) -> LLM:
        llm = self.inner
        while isinstance(llm, LLMWrapper):
            llm = llm.inner
        return llm


def _forwarder(name: str):
    def forward(self, *args, **kwargs):
        return getattr(self.inner, name)(*args, **kwargs)

    forward.__name__ = name
    forward.__doc__ = f"Forwarded to the wrapped LLM's `{name}`."
    return forward


def _attribute(name: str) -> property:
    """The wrapped LLM's attribute, unless set on the wrapper (e.g. to expose fewer capabilities)."""

    def get(self):
        own = self.__dict__.get("_own", {})
        return own[name] if name in own else getattr(self.inner, name)

    def set_(self, value):
        self.__dict__.setdefault("_own", {})[name] = value

    return property(get, set_, doc=f"The wrapped LLM's `{name}`, unless set on this wrapper.")


def interface_members() -> list[str]:
    """The public methods of the LLM interface (what a wrapper must forward)."""
    return sorted(n for n, v in vars(LLM).items() if callable(v) and not n.startswith("_"))


for _name in interface_members():
    if _name not in vars(LLMWrapper):
        setattr(LLMWrapper, _name, _forwarder(_name))
for _name in _ATTRIBUTES:
    setattr(LLMWrapper, _name, _attribute(_name))
LLMWrapper.__abstractmethods__ = frozenset()
