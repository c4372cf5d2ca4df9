"""Render chat messages with the model's own chat template (the Jinja string stored in a GGUF).

Rendering ourselves, instead of letting each backend do it, means that generation, scoring and
next-token reads all see exactly the same prompt text.
"""

from __future__ import annotations

from datetime import datetime
from functools import lru_cache

from jinja2.sandbox import ImmutableSandboxedEnvironment

from verirag.errors import CapabilityError, InputError
from verirag.types import Prompt


def _raise(message: str):
    raise CapabilityError(f"chat template error: {message}")


@lru_cache(maxsize=8)
def _compile(template: str):
    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
    env.globals["raise_exception"] = _raise
    env.globals["strftime_now"] = lambda fmt: datetime.now().strftime(fmt)
    return env.from_string(template)


def render_chat(
    template: str | None,
    messages: list[dict[str, str]],
    *,
    bos_token: str = "",
    eos_token: str = "",
    add_generation_prompt: bool = True,
) -> str:
    """Render `messages` to the prompt string the model was trained on.

    Models without a template (base models such as gemma3-270m) get a plain transcript that
    ends with "Assistant:", which is what a base model can continue sensibly.
    """
    if not template:
        lines = [f"{m['role'].capitalize()}: {m['content']}" for m in messages]
        if add_generation_prompt:
            lines.append("Assistant:")
        return "\n\n".join(lines)
    return _compile(template).render(
        messages=messages, add_generation_prompt=add_generation_prompt, bos_token=bos_token, eos_token=eos_token
    )


def plain_messages(messages: list[dict]) -> list[dict[str, str]]:
    """Messages as {role, content} only: what an endpoint or a chat template is given. Extra keys
    (an assistant message's generated `token_ids`) guide the llama.cpp backend's evaluation path
    and mean nothing to anyone else."""
    return [{"role": m["role"], "content": m["content"]} for m in messages]


def continued_message(prompt: Prompt) -> int | None:
    """Index of the last assistant message that carries the `token_ids` its generation produced
    (a conversation continued after a generation), or None."""
    if isinstance(prompt, str):
        return None
    for i in range(len(prompt) - 1, -1, -1):
        m = prompt[i]
        if m.get("role") == "assistant" and m.get("token_ids"):
            return i
    return None


def validate_messages(prompt: Prompt) -> None:
    """Reject malformed chat prompts early with a message that says what is wrong."""
    if isinstance(prompt, str):
        return
    if not isinstance(prompt, list) or not prompt:
        raise InputError("a chat prompt must be a non-empty list of {role, content} messages")
    for m in prompt:
        if not isinstance(m, dict) or "role" not in m or "content" not in m:
            raise InputError(f"malformed chat message: {m!r}")
