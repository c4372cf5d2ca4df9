"""The grid asks an example's question in its conversation as `ask` and `Verifier` do (issue 49,
item 1): the history passed as history and cut by the one rule (`AnswerState.asked`), not every
turn joined into one long question. A long conversation that `Verifier().verify(..., history=)`
judges is judged the same in a grid record."""

from __future__ import annotations

import json

import pytest
from doubles import ScriptedLLM

from verirag import Passage, Verifier
from verirag.conversation import MAX_HISTORY_WORDS
from verirag.errors import InputError

QUESTION = "Who designed it?"
ANSWER = "Ada Brennan designed the lighthouse."
PASSAGES = [
    Passage("a", "The lighthouse on Varnholt was designed by Ada Brennan in 1887."),
    Passage("b", "Puffins nest on the cliffs of Varnholt in April."),
]


def long_history(turns: int = 30, words: int = 60) -> list[str]:
    """Alternating user / agent turns, far more words than the verifier's window or the cut keeps."""
    return [f"turn {i} " + " ".join(f"w{i}x{j}" for j in range(words)) for i in range(turns - 1)] + [
        "Tell me about the lighthouse on Varnholt."
    ]


def run_grid(tmp_path, history, llm):
    from verirag.records import ResultStore
    from verirag_lab.experiments.grid.config import parse_config
    from verirag_lab.experiments.grid.runner import run_experiment

    data = tmp_path / "conversation.jsonl"
    row = {"id": "c1", "question": QUESTION, "references": ["Ada Brennan"], "history": history}
    data.write_text(json.dumps({**row, "passages": [p.to_dict() for p in PASSAGES]}) + "\n")
    cfg = parse_config(
        {
            "name": "conversation",
            "datasets": [{"name": "jsonl", "path": str(data)}],
            "models": ["scripted"],
            "methods": ["vanilla+verifier"],
        }
    )
    run_experiment(cfg, tmp_path / "run", llm_factory=lambda spec, n_ctx: llm, progress=False)
    return ResultStore(tmp_path / "run").load()


def test_a_long_conversation_is_judged_in_the_grid_as_the_verifier_judges_it(tmp_path):
    history = long_history()
    assert sum(len(t.split()) for t in history) > MAX_HISTORY_WORDS
    llm = ScriptedLLM(ANSWER)
    (record,) = run_grid(tmp_path, history, llm)
    assert record.error is None, record.error  # before: "too long for the verifier's window"
    direct = Verifier().verify(QUESTION, ANSWER, PASSAGES, history=history)
    assert record.answer == ANSWER and record.score == pytest.approx(direct.score, abs=1e-6)
    (prompt,) = llm.prompts  # the generator read the cut conversation, as `ask` gives it
    text = json.dumps(prompt)
    assert "Tell me about the lighthouse" in text and "w0x0" not in text


def test_a_bad_turn_fails_the_run_before_it_starts(tmp_path):
    with pytest.raises(InputError, match="example c1: history\\[1\\] is empty"):
        run_grid(tmp_path, ["What is Varnholt?", "   ", "And its lighthouse?"], ScriptedLLM(ANSWER))
