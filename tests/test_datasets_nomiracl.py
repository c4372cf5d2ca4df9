"""`nomiracl` on tiny files in NoMIRACL's released format: prompt parsing, subsets, references."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from doubles import FailingLLM, ScriptedLLM

from verirag.errors import BackendError, InputError
from verirag_lab.datasets import load_dataset
from verirag_lab.datasets.nomiracl import clean_reference, parse_prompt

HEAD = (
    "I will give you a question and several contexts containing information about the "
    "question. Read the contexts carefully. If any of the contexts answers the question, "
    'respond as either "Yes, answer is present" or "I don\'t know".\n\n'
)


def prompt(query: str, passages: list[str]) -> str:
    contexts = "\n\n".join(f"[{i}] {p}" for i, p in enumerate(passages, start=1))
    return f"{HEAD}QUESTION:\n{query}\n\nCONTEXTS:\n{contexts}\n\nOUTPUT:\n"


def write_nomiracl(root: Path, n_per_subset: int = 3) -> Path:
    for subset in ("relevant", "non_relevant"):
        (root / subset).mkdir(parents=True)
        lines = []
        for i in range(n_per_subset):
            passages = [f"Doc {subset} {i}-{j}: Text of passage {j} about topic {i}." for j in range(3)]
            lines.append(
                json.dumps(
                    {
                        "query_id": f"{subset[0]}{i}#0",
                        "docids": [f"{i}#{j}" for j in range(3)],
                        "prompt": prompt(f"what about topic {i} in {subset}?", passages),
                        "template": "vanilla",
                        "results": {},
                    }
                )
            )
        (root / subset / "en.test.vanilla_prompt.jsonl").write_text("\n".join(lines) + "\n")
    return root


def test_parse_prompt_keeps_brackets_newlines_and_colon_titles() -> None:
    passages = [
        "Star Wars: Episode IV: A film [1977] by George Lucas.",
        "Plain: first line\n\nsecond paragraph with [3] inside",
        "Last: ends here.",
    ]
    query, parsed = parse_prompt(prompt("which film?", passages), 3, "here")
    assert query == "which film?"
    assert parsed == [
        ("Star Wars", "Episode IV: A film [1977] by George Lucas."),
        ("Plain", "first line\n\nsecond paragraph with [3] inside"),
        ("Last", "ends here."),
    ]
    with pytest.raises(InputError, match="fewer than 4"):
        parse_prompt(prompt("q", passages), 4, "here")
    with pytest.raises(InputError, match="QUESTION"):
        parse_prompt("no sections at all", 1, "here")


def test_subsets_answerability_and_relevance(tmp_path: Path) -> None:
    root = write_nomiracl(tmp_path)
    both = load_dataset("nomiracl", root)
    assert len(both) == 6 and [e.answerable for e in both] == [True] * 3 + [False] * 3
    rel, non = both[0], both[3]
    assert rel.id == "r0#0" and rel.question == "what about topic 0 in relevant?"
    assert [p.id for p in rel.passages] == ["0#0", "0#1", "0#2"]
    assert rel.passages[1].title == "Doc relevant 0-1" and rel.passages[1].text.startswith("Text of")
    assert rel.relevance == [None] * 3 and non.relevance == [0] * 3
    assert rel.references == [] and rel.meta["subset"] == "relevant"
    assert [e.id for e in load_dataset("nomiracl", root, subset="non_relevant")] == ["n0#0", "n1#0", "n2#0"]
    picked = load_dataset("nomiracl", root, n=4, seed=2)
    assert len(picked) == 4 and picked == load_dataset("nomiracl", root, n=4, seed=2)
    with pytest.raises(InputError, match="subset"):
        load_dataset("nomiracl", root, subset="half")
    with pytest.raises(InputError, match="relevant"):
        load_dataset("nomiracl", tmp_path / "relevant")


def test_references_generated_for_relevant_queries_only(tmp_path: Path) -> None:
    root = write_nomiracl(tmp_path)
    llm = ScriptedLLM(' "Topic Zero."\nBecause the passage says so.')
    examples = load_dataset("nomiracl", root, references_llm=llm)
    assert len(llm.prompts) == 3
    user = llm.prompts[0][-1]["content"]
    assert "what about topic 0 in relevant?" in user and "[2] Doc relevant 0-1\nText of passage 1" in user
    assert [e.references for e in examples] == [["Topic Zero"]] * 3 + [[]] * 3
    assert examples[0].meta["reference_raw"].startswith(' "Topic Zero."')
    assert "reference_raw" not in examples[3].meta
    none = load_dataset("nomiracl", root, subset="relevant", n=1, references_llm=ScriptedLLM("No answer."))
    assert none[0].references == [] and none[0].meta["reference_raw"] == "No answer."
    with pytest.raises(InputError, match="LLM"):
        load_dataset("nomiracl", root, references_llm="qwen")


def test_a_failed_request_leaves_one_example_without_reference(tmp_path: Path) -> None:
    outage = FailingLLM(BackendError("prompt longer than the context window"))
    examples = load_dataset("nomiracl", write_nomiracl(tmp_path), subset="relevant", references_llm=outage)
    assert all(e.references == [] and "context window" in e.meta["reference_error"] for e in examples)

    error_reply = ScriptedLLM("partial", finish_reason="error")
    examples = load_dataset("nomiracl", tmp_path, subset="relevant", references_llm=error_reply)
    assert all(e.references == [] and e.meta["reference_error"] for e in examples)


@pytest.mark.parametrize(
    "raw, expected",
    [
        ("Paris", "Paris"),
        ("Answer: 1972.", "1972"),
        ("**Abraham Lincoln**\nmore", "Abraham Lincoln"),
        ("\n\nI don't know.", ""),
        ("U.S.", "U.S."),
        ("Washington, D.C.", "Washington, D.C."),
        ("", ""),
    ],
)
def test_clean_reference(raw: str, expected: str) -> None:
    assert clean_reference(raw, ["no answer", "i don't know"]) == expected
