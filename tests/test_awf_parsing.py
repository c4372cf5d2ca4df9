"""Parsing of structured outputs: InstructRAG's "Response:" line and __DONT_KNOW__ variants."""

from __future__ import annotations

import pytest

from verirag.awf.parsing import extract_response, is_dont_know


@pytest.mark.parametrize(
    "text, answer",
    [
        ("The documents say so.\nResponse: Paris", "Paris"),
        ("reasoning\n\nResponse: The capital of France is Paris.", "The capital of France is Paris."),
        ("reasoning\nresponse: paris", "paris"),
        ("reasoning\nRESPONSE: Paris", "Paris"),
        ("reasoning\n**Response:** Paris", "Paris"),
        ("reasoning\n**Response**: Paris", "Paris"),
        ("reasoning\n__Response__: Paris", "Paris"),
        ("reasoning\nResponse:Paris", "Paris"),
        ("reasoning\nResponse :  Paris  ", "Paris"),
        ("reasoning\nResponse: **Paris**", "Paris"),
        ('reasoning\nResponse: "Paris"', "Paris"),
        ("reasoning\n### Response: Paris", "Paris"),
        ("reasoning\nFinal Response: Paris", "Paris"),
        ("so the answer follows. Response: Paris", "Paris"),
        ("reasoning\nResponse:\n\nParis\n", "Paris"),
        # the last occurrence wins (few-shot echoes or self-corrections come first)
        ("Response: Lyon\nWait, document 2 says otherwise.\nResponse: Paris", "Paris"),
        ("Response: __DONT_KNOW__", "__DONT_KNOW__"),
        ("Response: **__DONT_KNOW__**", "__DONT_KNOW__"),
    ],
)
def test_extract_response_ok(text, answer):
    parsed = extract_response(text)
    assert parsed.ok and parsed.reason is None
    assert parsed.answer == answer


def test_response_marker_only_as_a_word():
    # "responses:" / "corresponse" are not the marker
    parsed = extract_response("The responses: vary.\nParis is the answer")
    assert not parsed.ok
    assert parsed.answer == "Paris is the answer"


@pytest.mark.parametrize(
    "text, answer",
    [
        ("The documents mention Paris.\nParis\n\n", "Paris"),
        ("Just one line", "Just one line"),
        ("line one\n  **line two**  \n   \n", "line two"),
    ],
)
def test_extract_response_missing_marker(text, answer):
    parsed = extract_response(text)
    assert not parsed.ok
    assert parsed.answer == answer
    assert "Response" in parsed.reason


@pytest.mark.parametrize("text", ["", "   \n ", None])
def test_extract_response_empty(text):
    parsed = extract_response(text)
    assert parsed == extract_response(text) and not parsed.ok
    assert parsed.answer == "" and parsed.reason == "empty output"


def test_extract_response_empty_after_marker():
    parsed = extract_response("Document 1 says Paris.\nResponse:   \n")
    assert not parsed.ok
    assert parsed.answer == "Document 1 says Paris."
    assert "empty" in parsed.reason


@pytest.mark.parametrize(
    "text",
    [
        "__DONT_KNOW__",
        "__dont_know__",
        "DONT_KNOW",
        "__DONT KNOW__",
        "DONT KNOW",
        "dont_know",
        "dont know",
        "DON'T KNOW",
        "DON\u2019T KNOW",
        "__DON'T_KNOW__",
        "_DONT_KNOW_",
        "DONT-KNOW",
        "DO_NOT_KNOW",
        "__DONT_KNOW__.",
        "**__DONT_KNOW__**",
        "`__DONT_KNOW__`",
        "I don't know.",
        "Answer: __DONT_KNOW__",
        "The documents do not say.\nResponse: __DONT_KNOW__",
        "The documents do not say.\n**Response:** DONT KNOW",
        "reasoning\nResponse:__DONT_KNOW__",
    ],
)
def test_is_dont_know_true(text):
    assert is_dont_know(text)


@pytest.mark.parametrize(
    "text",
    [
        "Paris",
        "",
        None,
        "The donut knowledge base",
        "Undone knowledge",
        "Dontknowledge",
        # a rationale may mention the token, but the Response line decides
        "I considered replying __DONT_KNOW__, but document 1 names it.\nResponse: Paris",
    ],
)
def test_is_dont_know_false(text):
    assert not is_dont_know(text)
