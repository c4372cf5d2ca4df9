"""Answers from the local models, in three styles, through the request cache.

Styles: "short" is the Vanilla generator's prompt (the pipeline's own answers, a few words);
"sentence" one complete sentence; "long" two to four sentences (the base of local edits and of
swaps and evidence removal on real answers). The prompt id `name@digest` names the wording.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from verirag.awf.generators.vanilla import VanillaGenerator
from verirag.awf.passages import prompt_passages
from verirag.errors import InputError
from verirag.prompts import DEFAULT_LAYOUT, load_prompt
from verirag.types import Passage

STYLES = ("short", "sentence", "long")
TEMPERATURES = (0.0, 0.7)
_PROMPTS = {"short": "vanilla", "sentence": "answer_one_sentence", "long": "answer_few_sentences"}
MAX_TOKENS = {"short": 48, "sentence": 80, "long": 200}


def prompt_for(style: str, question: str, passages: Sequence[Passage]) -> tuple[list[dict[str, str]], str]:
    """(chat messages, prompt id) of `style`."""
    if style not in _PROMPTS:
        raise InputError(f"unknown answer style {style!r}; choose one of {', '.join(STYLES)}")
    if style == "short":
        template = load_prompt("vanilla", DEFAULT_LAYOUT)
        return VanillaGenerator.prompt_messages(question, passages), f"vanilla.{DEFAULT_LAYOUT}@{template.digest}"
    template = load_prompt(_PROMPTS[style])
    messages = template.messages(question=question, passages=prompt_passages(template, passages))
    return messages, f"{template.name}@{template.digest}"


@dataclass(frozen=True)
class Generated:
    """One answer an LLM wrote, with what a record keeps of how."""

    text: str
    finish_reason: str
    provenance: dict[str, Any]  # model, fingerprint, prompt, temperature, seed


def generate(
    llm, model: str, style: str, question: str, passages: Sequence[Passage], *, temperature: float, seed: int
) -> Generated:
    messages, prompt_id = prompt_for(style, question, passages)
    gen = llm.generate(messages, max_tokens=MAX_TOKENS[style], temperature=temperature, seed=seed)
    return Generated(gen.text.strip(), gen.finish_reason, provenance(llm, model, prompt_id, temperature, seed))


def provenance(llm, model: str, prompt_id: str, temperature: float, seed: int) -> dict[str, Any]:
    """What a record keeps of how an LLM wrote its text."""
    return {
        "model": model,
        "fingerprint": (llm.fingerprint or "")[:16],
        "prompt": prompt_id,
        "temperature": temperature,
        "seed": seed,
    }
