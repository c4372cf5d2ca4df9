"""Prompt data files and chat-template rendering."""

from __future__ import annotations

import pytest

from verirag.awf.generators.vanilla import VanillaGenerator
from verirag.errors import InputError
from verirag.llm.chat_template import render_chat, validate_messages
from verirag.prompts import load_prompt
from verirag.types import Passage

CHATML = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)


def test_vanilla_prompt_has_the_papers_wording():
    p = load_prompt("vanilla")
    assert p.system.startswith("You are a helpful assistant that answers a question based on the context")
    assert "do not refer to the context in anyway" in p.system
    msgs = p.messages(question="Who?", passages="P1\n\nP2")
    assert msgs[0]["role"] == "system"
    assert msgs[1]["content"] == (
        "Read the following context carefully and answer the question below.\nQuestion:\nWho?\nContext:\nP1\n\nP2"
    )


def test_vanilla_generator_formats_passages():
    msgs = VanillaGenerator.prompt_messages(
        "Q?", [Passage("a", " text A ", title="Title A"), Passage("b", "text B")], layout="paper"
    )
    assert msgs[1]["content"].endswith("Title A\ntext A\n\ntext B")


def test_braces_in_values_are_safe():
    msgs = load_prompt("no_context").messages(question="what is {x}?")
    assert msgs[-1]["content"] == "what is {x}?"


def test_unknown_prompt():
    with pytest.raises(KeyError):
        load_prompt("nope")


def test_render_chat_with_and_without_template():
    msgs = [{"role": "system", "content": "S"}, {"role": "user", "content": "U"}]
    assert render_chat(CHATML, msgs) == (
        "<|im_start|>system\nS<|im_end|>\n<|im_start|>user\nU<|im_end|>\n<|im_start|>assistant\n"
    )
    assert render_chat(None, msgs) == "System: S\n\nUser: U\n\nAssistant:"


def test_validate_messages():
    validate_messages("plain text")
    for bad in ([], [{"role": "user"}], ["hi"]):
        with pytest.raises(InputError):
            validate_messages(bad)
