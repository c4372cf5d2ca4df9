"""The conversation a question was asked in (`history`, issue 36 item 2): every verify entry point
takes it, the shipped verifier reads a follow-up in it, the LLM prompts put it before the question,
and bad or long histories are refused clearly or cut as documented."""

from __future__ import annotations

import json

import pytest

from verirag import Verifier
from verirag.answer_log import read_answer_log
from verirag.conversation import (
    MAX_HISTORY_WORDS,
    MAX_TURNS,
    InContext,
    as_history,
    in_context,
    question_and_history,
    speaker_lines,
)
from verirag.errors import InputError
from verirag.types import Passage

# A follow-up whose "it" is named only in the conversation: two albums, two release dates.
PASSAGES = [
    "Boy is the debut studio album by the Irish rock band U2. It was released on 20 October 1980 by Island Records.",
    "The Joshua Tree is the fifth studio album by U2. It was released on 9 March 1987 by Island Records.",
]
HISTORY = ["what was the first album of U2?", "Boy."]
QUESTION = "When was it released?"
RIGHT = "It was released on 20 October 1980."
WRONG = "It was released on 9 March 1987."


# ---- the shapes and the rules ------------------------------------------------------------------
def test_history_takes_strings_or_openai_messages():
    assert as_history(None) == () and as_history([]) == ()
    assert as_history(["  who are  U2? ", "A band."]) == ("who are U2?", "A band.")
    msgs = [
        {"role": "system", "content": "Answer briefly."},  # instructs: no turn
        {"role": "user", "content": [{"type": "text", "text": "who are U2?"}]},
        {"role": "assistant", "content": "A band."},
    ]
    assert as_history(msgs) == ("User: who are U2?", "Assistant: A band.")
    assert speaker_lines(["q", "a"]) == ["User: q", "Agent: a"]
    assert speaker_lines(["User: q", "Assistant: a"]) == ["User: q", "Assistant: a"]


@pytest.mark.parametrize(
    ("history", "says"),
    [
        ("who are U2?", "not a str"),
        ({"role": "user", "content": "x"}, "not a dict"),
        (42, "not a int"),
        (["ok", 3], r"history\[1\] is a int"),
        (["ok", None], r"history\[1\] is a NoneType"),
        (["ok", ""], r"history\[1\] is empty"),
        (["ok", "   \n"], r"history\[1\] is empty"),
        ([{"role": "tool", "content": "x"}], "role is user, assistant or system"),
        ([{"role": "user", "content": 7}], "content is a string"),
        ([{"role": "user", "content": ""}], "is empty"),
        (["a\x00b"], "NUL"),
    ],
)
def test_bad_history_is_a_clear_input_error(history, says):
    with pytest.raises(InputError, match=says):
        as_history(history)


def test_a_long_history_is_cut_to_its_recent_turns_as_documented():
    turns = [f"turn {i}" for i in range(200)]
    kept = as_history(turns)
    assert len(kept) == MAX_TURNS and kept[-1] == "turn 199" and kept[0] == "turn 168"
    odd = as_history(turns[:201] + ["turn 200"])  # 201 turns: an even number dropped, the user's turn first
    assert len(odd) == MAX_TURNS - 1 and odd[0] == "turn 170"
    wordy = as_history(["w " * 600, "x " * 300, "y " * 600])  # 1,500 words: the last 600 fit
    assert wordy == (" ".join(["y"] * 600),)
    huge = as_history(["z " * 5000])
    assert len(huge) == 1 and len(huge[0].split()) == MAX_HISTORY_WORDS


def test_in_context_keeps_the_bare_question_and_puts_the_conversation_first():
    q = in_context(QUESTION, as_history(HISTORY))
    assert isinstance(q, InContext) and isinstance(q, str)
    assert q.index("Conversation so far:") < q.index("User: what was the first album") < q.index(QUESTION)
    assert question_and_history(q) == (QUESTION, tuple(HISTORY))
    assert in_context(QUESTION, ()) == QUESTION and question_and_history(QUESTION) == (QUESTION, ())


# ---- the trained verifier ----------------------------------------------------------------------
@pytest.fixture(scope="module")
def verifier():
    return Verifier()  # the default: the shipped trained verifier, no LLM


def test_the_shipped_verifier_reads_a_follow_up_in_its_conversation(verifier):
    alone = {a: verifier.verify(QUESTION, a, PASSAGES).score for a in (RIGHT, WRONG)}
    told = {a: verifier.verify(QUESTION, a, PASSAGES, history=HISTORY).score for a in (RIGHT, WRONG)}
    print(f"without history {alone}, with {told}")
    assert max(abs(told[a] - alone[a]) for a in (RIGHT, WRONG)) > 0.02  # the history is read
    # with the conversation, the album's own date still ranks above the other album's. On this fixture
    # the gap does not widen: the shipped verifier (trained on follow-ups made from NQ and HotpotQA) moves
    # the right date little (0.91 to 0.92) and raises the other album's (0.84 to 0.91)
    assert told[RIGHT] > told[WRONG]
    as_messages = [{"role": "user", "content": HISTORY[0]}, {"role": "assistant", "content": HISTORY[1]}]
    assert verifier.verify(QUESTION, RIGHT, PASSAGES, history=as_messages).score == pytest.approx(
        told[RIGHT], abs=0.02
    )  # the speaker labels are not read: the same turns


def test_the_claims_stay_within_half_the_window_whatever_the_history(verifier):
    from verirag.learned.verifier_inputs import PairReader

    model = verifier.pipeline.answer_verifier().model
    reader: PairReader = model.reader
    long_answer = " ".join(["The album was recorded in Dublin with many guests"] * 12) + "."
    for history in ([f"turn {i} about the band and its albums" for i in range(200)], ["x " * 900], HISTORY):
        turns = as_history(history)
        _s, claims, _o, context = reader.claims(QUESTION, long_answer, turns)
        assert context and max(reader.n_tokens(c) for c in claims) <= reader.claim_budget
        assert turns[-1].split()[-1] in context.split() or context.split()[0] == turns[-1].split()[0]
    _s, claims, _o, context = reader.claims(QUESTION, RIGHT, as_history(HISTORY))
    assert context == " ".join(HISTORY) and claims == [f"{context} {QUESTION} {RIGHT}"]
    v = verifier.verify(QUESTION, RIGHT, PASSAGES, history=[f"turn {i}" for i in range(200)])
    assert v.score is not None and v.error is None  # 200 turns: cut, never a crash


def test_verify_many_rows_take_a_history_and_a_bad_one_is_that_rows_error(verifier):
    rows = [
        {"question": QUESTION, "answer": RIGHT, "contexts": PASSAGES, "history": HISTORY},
        (QUESTION, RIGHT, PASSAGES, HISTORY),
        {"question": QUESTION, "answer": RIGHT, "contexts": PASSAGES, "history": "Boy."},
        {"question": QUESTION, "answer": RIGHT, "contexts": PASSAGES, "history": ["", "Boy."]},
    ]
    out = verifier.verify_many(rows)
    assert out[0].score == pytest.approx(out[1].score) and out[0].error is None
    assert out[2].score is None and "history is a list" in out[2].error
    assert out[3].score is None and "history[0] is empty" in out[3].error
    with pytest.raises(InputError, match="history"):
        verifier.verify(QUESTION, RIGHT, PASSAGES, history=[{"role": "user"}])


# ---- the LLM prompts ---------------------------------------------------------------------------
def test_llm_judges_and_the_generator_read_the_conversation_before_the_question():
    from doubles import ScriptedLLM, yes_no

    from verirag.awf.pipeline import Pipeline
    from verirag.llm.metered import MeteredLLM

    llm = ScriptedLLM("20 October 1980", next_token=lambda _p: yes_no(0.8))
    for method in ("vanilla+llm_judge", "vanilla+nli", "vanilla+self_check"):
        p = Pipeline.from_preset("tiny", method=method, retrieval="bm25")
        p._llms[p.config.model] = MeteredLLM(llm)
        llm.requests.clear()
        v = p.verify(QUESTION, RIGHT, [Passage(id=f"p{i}", text=t) for i, t in enumerate(PASSAGES)], history=HISTORY)
        assert v.score is not None, (method, v.error)
        prompt = json.dumps(llm.prompts[-1], ensure_ascii=False)
        assert "what was the first album of U2?" in prompt and "Boy." in prompt, method
        assert prompt.index("what was the first album of U2?") < prompt.index(QUESTION), method
    # ask: retrieval, the generator and the judge all read it
    p = Pipeline.from_preset("tiny", method="vanilla+llm_judge", retrieval="bm25", k=1)
    p._llms[p.config.model] = MeteredLLM(llm)
    p.index([Passage(id=f"p{i}", text=t) for i, t in enumerate(PASSAGES)])
    llm.requests.clear()
    r = p.ask(QUESTION, history=HISTORY)
    assert r.evidence[0].id == "p0"  # "Boy" and "first" are in the retrieval query
    assert len(llm.prompts) == 2
    for prompt in map(json.dumps, llm.prompts):
        assert prompt.index("Conversation so far:") < prompt.index("what was the first album") < prompt.index(QUESTION)
    with pytest.raises(InputError, match="history"):
        p.ask(QUESTION, history="Boy.")


# ---- the answer logs ---------------------------------------------------------------------------
FORMAT_FIELDS = {
    "ragas": ("user_input", "response", "retrieved_contexts"),
    "ragas_legacy": ("question", "answer", "contexts"),
    "deepeval": ("input", "actual_output", "retrieval_context"),
    "verirag": ("question", "answer", "passages"),
}


@pytest.mark.parametrize("fmt", sorted(FORMAT_FIELDS))
def test_every_log_format_reads_a_history_field(tmp_path, fmt):
    q, a, c = FORMAT_FIELDS[fmt]
    lines = [
        {"id": "strings", q: QUESTION, a: RIGHT, c: PASSAGES, "history": HISTORY},
        {"id": "messages", q: QUESTION, a: RIGHT, c: PASSAGES, "history": [{"role": "user", "content": "hi"}]},
        {"id": "none", q: QUESTION, a: RIGHT, c: PASSAGES},
        {"id": "bad", q: QUESTION, a: RIGHT, c: PASSAGES, "history": "Boy."},
        {"id": "empty-turn", q: QUESTION, a: RIGHT, c: PASSAGES, "history": ["q", " "]},
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    log = read_answer_log(path)
    assert log.fields.format == fmt and log.fields.history == "history"
    e = {x.id: x for x in log.entries}
    assert e["strings"].history == tuple(HISTORY) and e["messages"].history == ("User: hi",)
    assert e["none"].ok and e["none"].history == ()
    assert "not a str" in e["bad"].error and "history[1] is empty" in e["empty-turn"].error
    assert read_answer_log(path, history_field="none").entries[0].history == ()
    renamed = tmp_path / "renamed.jsonl"
    renamed.write_text(json.dumps({q: QUESTION, a: RIGHT, c: PASSAGES, "turns": HISTORY}) + "\n")
    assert read_answer_log(renamed, history_field="turns").entries[0].history == tuple(HISTORY)


def test_verify_log_verifies_each_row_in_its_conversation(tmp_path, verifier):
    from verirag.answer_log import verify_log
    from verirag.answer_log.run import RESULTS_FILE

    rows = [
        {"id": "told", "user_input": QUESTION, "response": WRONG, "retrieved_contexts": PASSAGES, "history": HISTORY},
        {"id": "alone", "user_input": QUESTION, "response": WRONG, "retrieved_contexts": PASSAGES},
    ]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(x) + "\n" for x in rows))
    done = verify_log(verifier.pipeline, path, tmp_path / "out")
    got = {r["id"]: r for r in map(json.loads, (tmp_path / "out" / RESULTS_FILE).read_text().splitlines())}
    assert got["told"]["score"] == pytest.approx(verifier.verify(QUESTION, WRONG, PASSAGES, history=HISTORY).score)
    assert got["alone"]["score"] == pytest.approx(verifier.verify(QUESTION, WRONG, PASSAGES).score)
    assert got["told"]["score"] != got["alone"]["score"] and done.summary["fields"]["history"] == "history"
    # the row without history keeps its key (resumed); read without its history, "told" is verified again
    again = verify_log(verifier.pipeline, path, tmp_path / "out", history_field="none")
    assert (again.run.written, again.run.already_done) == (1, 1)
    assert [r["score"] for r in again.run.records] == pytest.approx([got["alone"]["score"]] * 2)


def test_the_langchain_verifier_reads_the_chains_chat_history(verifier):
    pytest.importorskip("langchain_core")
    from langchain_core.documents import Document
    from langchain_core.messages import AIMessage, HumanMessage, SystemMessage

    from verirag.awf.pipeline import Pipeline
    from verirag.integrations.langchain import VeriragVerifier

    # the act stage builds its policy with the pipeline's model: the smallest real one (the verdict is the
    # trained verifier's either way)
    v = VeriragVerifier(pipeline=Pipeline.from_preset("tiny"), threshold=0.0)
    base = {"input": QUESTION, "answer": RIGHT, "context": [Document(page_content=t) for t in PASSAGES]}
    chat = [SystemMessage("Be brief."), HumanMessage(HISTORY[0]), AIMessage(HISTORY[1])]
    told, alone = v.invoke(base | {"chat_history": chat}), v.invoke(base)
    assert told["score"] == pytest.approx(verifier.verify(QUESTION, RIGHT, PASSAGES, history=HISTORY).score)
    assert alone["score"] == pytest.approx(verifier.verify(QUESTION, RIGHT, PASSAGES).score)
    assert told["score"] != alone["score"]
    with pytest.raises(InputError, match="chat_history"):
        v.invoke(base | {"chat_history": "Boy."})
