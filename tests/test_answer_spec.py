"""The answer spec (`verirag.awf.answer_spec`): one typed, frozen spec whose `resolve()` applies every
default, and every door (Python, the CLI, HTTP, the grid's YAML) reading its options through it."""

from __future__ import annotations

import dataclasses

import pytest
import typer
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from verirag.awf.answer_spec import DEFAULTS, FLAT, PRESETS, AnswerSpec, PruneOptions
from verirag.awf.defaults import DEFAULT_METHOD, GENERATED_DEFAULT, JUDGED_METHOD, given_answer_method
from verirag.awf.pipeline import PRESETS as CONFIG_PRESETS
from verirag.awf.pipeline import Pipeline, PipelineConfig
from verirag.awf.stage_kinds.prune import PRUNE_DEFAULT, SHIPPED, PruneSetting
from verirag.cli import app
from verirag.conversation import MAX_HISTORY_WORDS, MAX_TURNS
from verirag.errors import InputError
from verirag.server import ServiceConfig, VeriragService, create_app
from verirag.server.schemas import AskRequest, VerifyRequest
from verirag_lab.experiments.grid.config import _Config, _Generation, parse_config


# ---- resolve: every default in one place ------------------------------------------------------------
def test_resolve_applies_the_defaults_then_the_preset_under_what_the_spec_names():
    r = AnswerSpec().resolve()
    assert {k: getattr(r, k) for k in DEFAULTS} == DEFAULTS
    assert r.method == GENERATED_DEFAULT and r.prune.setting == PRUNE_DEFAULT
    assert (r.conversation.max_turns, r.conversation.max_words) == (MAX_TURNS, MAX_HISTORY_WORDS)
    assert r.trust is None and r.rerank is None and r.max_answer_tokens is None and r.backend_timeout is None
    tiny = AnswerSpec(preset="tiny").resolve()
    assert (tiny.model, tiny.n_ctx) == ("smollm2-135m", 2048)
    assert AnswerSpec(preset="tiny", model="qwen2.5-0.5b", n_ctx=1024).resolve().model == "qwen2.5-0.5b"


def test_the_default_method_is_the_models_and_given_answers_go_to_the_verifier():
    """The stack for the model it was fitted for, the verifier for any other model; a door that
    verifies given answers (no generation log-probs) resolves to the stack's fallback."""
    assert AnswerSpec().resolve().method == GENERATED_DEFAULT == PipelineConfig().method
    assert AnswerSpec(preset="tiny").resolve().method == DEFAULT_METHOD == PipelineConfig(model="smollm2-135m").method
    assert AnswerSpec(model="qwen2.5-0.5b").resolve().method == DEFAULT_METHOD
    assert AnswerSpec().for_given_answers().method == DEFAULT_METHOD
    assert AnswerSpec(method="vanilla+nli").for_given_answers().method == "vanilla+nli"
    assert given_answer_method("instructrag+stacked(fallback=verifier)") == "instructrag+verifier"
    assert given_answer_method("vanilla+stacked") == "vanilla+stacked"  # no fallback: refused where it cannot judge
    assert PipelineConfig(judge="llm").method == JUDGED_METHOD  # as resolve() reads a judge without a method


def test_a_judge_without_a_method_selects_the_method_that_uses_one():
    assert AnswerSpec(judge="llm").resolve().method == JUDGED_METHOD
    assert AnswerSpec(judge="llm", method="instructrag+nli").resolve().method == "instructrag+nli"
    assert AnswerSpec(method="vanilla+self_check").resolve().method == "vanilla+self_check"


@pytest.mark.parametrize(
    "value, setting",
    [(None, PRUNE_DEFAULT), (True, SHIPPED), (False, PruneSetting()), (0.3, PruneSetting(True, 0.3))],
)
def test_prune_reads_as_every_door_reads_it(value, setting):
    assert AnswerSpec(prune=value).resolve().prune.setting == setting


@pytest.mark.parametrize(
    "spec",
    [
        AnswerSpec(),
        AnswerSpec(preset="tiny", judge="hf:some/nli", prune={"threshold": 0.4}),
        AnswerSpec.from_flat(trust="filters/t", on_untrusted="keep-top", forecaster="f", epsilon=0.2, k=3),
    ],
)
def test_resolve_is_idempotent_and_the_digest_names_what_it_resolved_to(spec):
    r = spec.resolve()
    assert r.resolve() == r and r.digest() == spec.digest()
    assert AnswerSpec.from_config(PipelineConfig.from_spec(r)).digest() == r.digest()  # the config says the same
    assert r.override(k=r.k + 1).digest() != r.digest()


def test_the_digest_is_the_same_for_the_same_settings_said_two_ways():
    assert AnswerSpec(preset="local").digest() == AnswerSpec(model=DEFAULTS["model"], k=5).digest()
    assert AnswerSpec(judge="llm").digest() == AnswerSpec(judge="llm", method=JUDGED_METHOD).digest()
    assert AnswerSpec(prune=True).digest() != AnswerSpec(prune=False).digest()


def test_pipeline_config_is_the_resolved_spec():
    assert PipelineConfig.from_spec(AnswerSpec()) == PipelineConfig()
    assert {n: PipelineConfig.from_spec(AnswerSpec(preset=n)) for n in PRESETS} == CONFIG_PRESETS
    # every PipelineConfig field is a flat name of the spec, and every flat name but the preset a field
    assert {f.name for f in dataclasses.fields(PipelineConfig)} == set(FLAT) - {"preset"}
    assert Pipeline.from_preset("tiny", judge="llm").config == PipelineConfig.from_spec(
        AnswerSpec(preset="tiny", judge="llm")
    )


def test_the_spec_is_frozen_and_its_retrievers_are_the_index_kinds():
    from pydantic import ValidationError

    from verirag.awf.answer_spec import RETRIEVERS
    from verirag.retrieval.index import KINDS

    assert RETRIEVERS == KINDS
    with pytest.raises(ValidationError):
        AnswerSpec().k = 3


def test_the_conversation_window_cuts_the_history_the_pipeline_reads():
    from verirag.awf.core import AnswerState

    turns = [f"turn {i}" for i in range(10)]
    assert len(AnswerState.asked("q", turns).history) == 10
    assert AnswerState.asked("q", turns, window=(4, 1000)).history == tuple(turns[-4:])
    assert AnswerState.asked("q", turns, window=(32, 4)).history == tuple(turns[-2:])
    assert PipelineConfig.from_spec(AnswerSpec.from_flat(history_turns=4)).history_turns == 4


# ---- bad values: clear errors, the same at every door ------------------------------------------------
@pytest.mark.parametrize(
    "given, message",
    [
        ({"threshold": 1.5}, "threshold must be a number in [0, 1], got 1.5"),
        ({"threshold": True}, "threshold must be a number in [0, 1], got true"),
        ({"k": 0}, "k must be an integer >= 1, got 0"),
        ({"fallback": "retry"}, "fallback must be one of abstain, no-rag, escalate, got 'retry'"),
        ({"retrieval": "grep"}, "retrieval must be one of hybrid, bm25, dense, got 'grep'"),
        ({"judge": "gpt"}, "judge must be llm"),
        ({"preset": "huge"}, "unknown pipeline preset 'huge'; known: local, fast, tiny"),
        ({"fallback": "escalate"}, "the escalate fallback needs a second model"),
        ({"on_untrusted": "shrug"}, "on_untrusted must be one of abstain, no-context, keep-top, got 'shrug'"),
        ({"prune": "yes"}, "prune: must be true, false, a threshold in [0, 1]"),
        ({"colour": "red"}, "unknown pipeline setting 'colour'"),
    ],
)
def test_bad_values_are_input_errors_that_say_what_is_taken(given, message):
    with pytest.raises(InputError) as e:
        AnswerSpec.from_flat(**given)
    assert message in str(e.value)
    kw = dict(given)
    with pytest.raises(InputError) as again:  # Python's other doors say the same
        Pipeline.from_preset(kw.pop("preset", "tiny"), **kw)
    assert str(again.value) == str(e.value)


@pytest.mark.parametrize(
    ("given", "runs"),
    [
        ("verifier", "vanilla+verifier"),
        ("nli(premise=evidence)", "vanilla+nli(premise=evidence)"),
        (" cascade ", "vanilla+cascade"),
        ("instructrag+verifier", "instructrag+verifier"),  # a full name stands
        ("intrinsic", "intrinsic"),  # a unified method is no judge
    ],
)
def test_a_method_named_by_its_judge_runs_after_the_plain_generator(given, runs):
    from verirag.awf.defaults import judge_name

    assert AnswerSpec(method=given).resolve().method == runs
    assert AnswerSpec(method=given).digest() == AnswerSpec(method=runs).digest()
    assert judge_name(runs) == (given.strip() if runs.startswith("vanilla+") else None)


def test_an_unknown_method_is_refused_when_the_spec_resolves():
    with pytest.raises(InputError, match="unknown method 'bogus'"):
        AnswerSpec(method="bogus").resolve()


def _cli_error(args: list[str]) -> str:
    r = CliRunner().invoke(app, args)
    assert isinstance(r.exception, InputError), (r.exception, r.output)
    return str(r.exception)


@pytest.fixture(scope="module")
def http():
    service = VeriragService(ServiceConfig(preset="tiny", warm_up=False))
    with TestClient(create_app(service)) as client:
        yield client


def _http_errors(http, route: str, body: dict) -> list[str]:
    r = http.post(route, json=body)
    assert r.status_code == 422, r.text
    return [f["message"] for f in r.json()["error"]["fields"]]


QA = {"question": "Who?", "answer": "Ada.", "passages": ["Ada did."]}


@pytest.mark.parametrize(
    "key, value, cli, problem",
    [
        ("threshold", 1.5, ["--threshold", "1.5"], "must be a number in [0, 1], got 1.5"),
        ("k", 0, ["--k", "0"], "must be an integer >= 1, got 0"),
        ("fallback", "retry", ["--fallback", "retry"], "must be one of abstain, no-rag, escalate, got 'retry'"),
        ("prune", 1.5, ["--prune-threshold", "1.5"], "must be a number in [0, 1], got 1.5"),
    ],
)
def test_a_bad_value_gets_the_same_message_at_every_door(http, tmp_path, key, value, cli, problem):
    from verirag.api import Verifier

    with pytest.raises(InputError) as python:
        AnswerSpec.from_flat(**{key: value})
    assert problem in str(python.value)
    (tmp_path / "a.txt").write_text("Ada did.")
    assert problem in _cli_error(["ask", "Who?", "--corpus", str(tmp_path), *cli])
    assert any(problem in m for m in _http_errors(http, "/v1/ask", {"question": "Who?", key: value}))
    if key == "threshold":
        with pytest.raises(InputError) as verifier:
            Verifier(threshold=value)
        assert str(verifier.value) == str(python.value)
        assert problem in _cli_error(
            ["verify", "--question", "Who?", "--answer", "Ada.", "--passages", str(tmp_path), *cli]
        )
        assert problem in _http_errors(http, "/v1/verify", {**QA, key: value})
    if key in ("threshold", "prune"):  # the grid's YAML names them too
        raw = {"models": ["m"], "methods": ["vanilla+nli"], "datasets": ["nq"], key: value}
        with pytest.raises(InputError) as grid:
            parse_config(raw)
        assert problem in str(grid.value)


# ---- judge: the same method at every door --------------------------------------------------------------
class _Stop(Exception):
    pass


def test_verify_and_serve_with_a_judge_run_the_judged_method(monkeypatch, tmp_path):
    import verirag.server.run

    seen = {}

    def caught_verify(self, *args, **kwargs):
        seen["verify"] = self.config.method
        raise _Stop

    def caught_serve(cfg, **_kw):
        service = VeriragService(dataclasses.replace(cfg, warm_up=False))
        seen["serve ask"], seen["serve verify"] = service.pipeline.config.method, service.verify_method
        seen["verify request"] = service.request_spec(service.verify_spec).method

    monkeypatch.setattr(Pipeline, "verify", caught_verify)
    monkeypatch.setattr(verirag.server.run, "serve", caught_serve)
    (tmp_path / "a.txt").write_text("Ada did.")
    r = CliRunner().invoke(
        app, ["verify", "--judge", "llm", "--question", "Q?", "--answer", "A.", "--passages", str(tmp_path)]
    )
    assert isinstance(r.exception, _Stop), r.output
    r = CliRunner().invoke(app, ["serve", "--judge", "llm", "--preset", "tiny"])
    assert r.exit_code == 0, r.output
    assert set(seen.values()) == {JUDGED_METHOD}, seen


def test_a_model_named_for_a_judge_that_calls_no_llm_is_said_to_be_unused(tmp_path):
    """Verifying given answers with a model named and no method: the verifier judges (no LLM), and
    the user hears that their model does not judge, with methods that would; not where it does."""
    said = AnswerSpec(model="qwen2.5-1.5b").unused_model()
    assert "'qwen2.5-1.5b' does not judge" in said and DEFAULT_METHOD in said and "stacked(impute=true)" in said
    assert AnswerSpec().unused_model() is None  # no model named
    assert AnswerSpec(model="qwen2.5-1.5b", method="nli").unused_model() is None  # its judge is the LLM
    assert AnswerSpec(model="qwen2.5-1.5b", method="stacked(impute=true)").unused_model() is None
    assert AnswerSpec(model="qwen2.5-1.5b", judge="llm").unused_model() is None
    (tmp_path / "a.txt").write_text("Ada Lovelace wrote the first program.")
    r = CliRunner().invoke(
        app,
        ["verify", "--model", "qwen2.5-1.5b", "--question", "Who wrote it?", "--answer", "Ada Lovelace.",
         "--passages", str(tmp_path), "--json"],
    )  # fmt: skip
    assert r.exit_code == 0, r.output
    assert "does not judge" in " ".join(r.output.split())


def test_the_verifier_says_so_too():
    from verirag.api import Verifier

    with pytest.warns(UserWarning, match="does not judge"):
        v = Verifier(model="qwen2.5-1.5b")
    assert v.method == DEFAULT_METHOD and any("does not judge" in w for w in v.warnings)


@pytest.mark.slow
def test_the_verifier_with_a_judge_runs_the_judged_method():
    from verirag.api import Verifier

    assert Verifier(judge="llm", preset="tiny").method == JUDGED_METHOD  # builds the judge: loads SmolLM2


# ---- every door's options against the spec's fields ------------------------------------------------------
# Options of a door that are no setting of an answer: where the input or the output is, how the door
# itself runs. Every other option must be a spec setting (FLAT) or a spelling of one (SPELLINGS).
DOOR_ONLY = {
    "question", "corpus", "index", "json_out",  # ask: the question, what to read, how to print
    "log", "out_dir", "answer", "passages", "limit", "block",  # verify: the answers and where results go
    "question_field", "answer_field", "contexts_field", "reference_field", "label_field", "history_field",
    "fit_precision", "delta",  # verify: fit a threshold on the log's labels afterwards
    "executor", "workers", "ray_address",  # verify: where a log's blocks are verified (locally or on Ray)
    "host", "port", "api_key", "queue_size", "queue_timeout", "timeout", "max_body", "log_level",  # serve
    "history",  # HTTP: the conversation of this question (its window is the spec's `conversation`)
}  # fmt: skip
SPELLINGS = {
    "prune_threshold": "prune",  # --prune-threshold X: prune at X
    "no_prune": "prune",  # --no-prune: prune false
    "verify_method": "method",  # serve: the method of /v1/verify's spec
    "stage": "stages",  # --stage MODULE:CLASS[,KEY=VALUE...], repeated: the stages a user wrote
}


def _cli_params(name: str) -> list[str]:
    command = typer.main.get_command(app).commands[name]
    return [p.name for p in command.params]


@pytest.mark.parametrize("command", ["ask", "verify", "serve", "demo"])
def test_every_cli_option_is_a_spec_setting_or_a_door_option(command):
    params = _cli_params(command)
    stray = [p for p in params if p not in FLAT and p not in DOOR_ONLY and SPELLINGS.get(p) not in FLAT]
    assert not stray, f"`verirag {command}` options that are no setting of AnswerSpec: {stray}"
    assert "threshold" in params and "model" in params


@pytest.mark.parametrize("request_model", [AskRequest, VerifyRequest])
def test_every_http_request_field_is_a_spec_setting_or_a_door_field(request_model):
    fields = list(request_model.model_fields)
    assert [f for f in fields if f not in FLAT and f not in DOOR_ONLY] == []
    openapi = request_model.model_json_schema()["properties"]
    assert openapi["threshold"]["anyOf"][0] == {"type": "number", "minimum": 0, "maximum": 1}


def test_the_http_request_types_are_the_spec_types():
    ask = {"question": "q"}
    for key, value in (("threshold", 0.25), ("k", 3), ("fallback", "no-rag")):
        assert getattr(AskRequest(**ask, **{key: value}), key) == getattr(AnswerSpec(**{key: value}), key)


# grid YAML key -> the spec setting it names (a list of models/methods is one spec per unit)
GRID_TO_SPEC = {
    "models": "model",
    "methods": "method",
    "judge_model": "judge_model",
    "threshold": "threshold",  # {value: T} is the spec's threshold; a target is fitted per run
    "prune": "prune",
    "stages": "stages",
    "generation.max_tokens": "max_answer_tokens",
    "generation.n_ctx": "n_ctx",
}
# keys of the grid that say what to evaluate and how to report it, not how to answer
GRID_ONLY = {"name", "datasets", "ground_truth", "applications", "bootstrap", "concurrency"}


def test_every_grid_key_is_a_spec_setting_or_a_grid_only_key():
    keys = [k for k in _Config.model_fields if k != "generation"]
    keys += [f"generation.{k}" for k in _Generation.model_fields]
    assert sorted(k for k in keys if k not in GRID_TO_SPEC and k not in GRID_ONLY) == []
    assert all(spec in FLAT for spec in GRID_TO_SPEC.values())


def test_a_grid_unit_resolves_to_the_spec_the_doors_build():
    raw = {
        "models": ["qwen2.5-0.5b"],
        "methods": ["vanilla+nli"],
        "datasets": ["nq"],
        "prune": 0.3,
        "generation": {"max_tokens": 64},
        "threshold": {"value": 0.7},
    }
    config = parse_config(raw)
    unit = config.answer_spec("qwen2.5-0.5b", config.methods[0])
    said = AnswerSpec(preset="fast", method="vanilla+nli", prune=PruneOptions(on=True, threshold=0.3))
    assert unit.digest() == said.override(max_answer_tokens=64, threshold=0.7).digest()
