"""One prune setting (issue 48, item 3): every door (Python, CLI, HTTP, the grid's YAML) reads
`true | false | number` the same way; `--prune` alone is the shipped pruner's own threshold and
`--no-prune` reads every sentence; a service keeps one pruner however many thresholds its clients
send; and the pruning stage meets bad input with a clear error or its documented behaviour.

The models are stand-ins that record their prompts (these tests are about what reaches them); the
pruner is the shipped one, loaded for real."""

from __future__ import annotations

import json
import math

import pytest
from doubles import ScriptedLLM
from fastapi.testclient import TestClient
from typer.testing import CliRunner

from verirag.awf.stage_kinds.prune import OFF, PRUNE_DEFAULT, SHIPPED, PruneSetting, cli_prune, parse_prune
from verirag.errors import InputError
from verirag.llm.base import EXACT_NEXT_TOKEN, LOGPROBS, NEXT_TOKEN
from verirag.types import Passage, ScoredPassage

QUESTION = "When was the lighthouse at Cape Arrow built?"
ANSWERING = "The lighthouse at Cape Arrow was built in 1874 by the harbour board."
UNRELATED = "The bakery on Arrow Street sells rye bread and apple cakes."
PASSAGES = [
    Passage("a", f"{ANSWERING} It stands on the northern cliff.", "Cape Arrow"),
    Passage("b", f"{UNRELATED} It opens at seven.", "Market"),
]


# ---- the one parser ---------------------------------------------------------------------------------
def test_the_default_is_on_at_the_shipped_threshold_and_is_one_constant():
    from verirag.awf.pipeline import PRESETS, PipelineConfig

    assert PRUNE_DEFAULT == SHIPPED and PRUNE_DEFAULT.on and PRUNE_DEFAULT.threshold is None  # issue 48's rule held
    assert parse_prune(None) is PRUNE_DEFAULT
    assert PipelineConfig().prune is PRUNE_DEFAULT and all(c.prune is PRUNE_DEFAULT for c in PRESETS.values())


@pytest.mark.parametrize(
    "value, setting",
    [
        (True, PruneSetting(on=True)),
        (False, PruneSetting(on=False)),
        (0.3, PruneSetting(on=True, threshold=0.3)),
        (0, PruneSetting(on=True, threshold=0.0)),
        (1, PruneSetting(on=True, threshold=1.0)),
        ({"threshold": 0.3, "pruner": "runs/p"}, PruneSetting(on=True, threshold=0.3, pruner="runs/p")),
        ({}, SHIPPED),
        (SHIPPED, SHIPPED),
    ],
)
def test_values_parse_to_one_setting(value, setting):
    assert parse_prune(value) == setting
    from verirag.awf.pipeline import PipelineConfig

    assert PipelineConfig(prune=value).prune == setting  # Python reads the same values


@pytest.mark.parametrize(
    "value, says",
    [
        (1.5, "prune: must be a number in [0, 1], got 1.5"),
        (-0.01, "prune: must be a number in [0, 1], got -0.01"),
        (math.nan, "prune: must be a number in [0, 1], got nan"),
        ("yes", "prune: must be true, false, a threshold in [0, 1] or a mapping"),
        ("0.3", "got '0.3'"),  # text is refused, never guessed at
        ({"treshold": 0.3}, "prune.treshold: unknown key"),
        ({"threshold": True}, "prune.threshold: must be a number in [0, 1], got true"),
    ],
)
def test_bad_values_are_clear_errors(value, says):
    with pytest.raises(InputError) as e:
        parse_prune(value)
    assert says in str(e.value)


def test_off_with_a_threshold_is_refused():
    with pytest.raises(InputError, match="pruning off"):
        PruneSetting(on=False, threshold=0.3)


# ---- the CLI ----------------------------------------------------------------------------------------
class Stop(Exception):
    """Raised by the stand-in Pipeline.from_preset once it has recorded what the CLI parsed."""


@pytest.fixture()
def parsed_by_cli(monkeypatch, tmp_path):
    """A function: the CLI arguments -> the `prune` the command built its pipeline (or service) with."""
    from verirag.awf import pipeline
    from verirag.cli import app

    got = {}

    def from_preset(name="local", **overrides):
        got["prune"] = pipeline.PipelineConfig(prune=overrides.get("prune")).prune
        raise Stop

    def serve(cfg, **_kw):
        got["prune"] = pipeline.PipelineConfig(prune=cfg.overrides.get("prune")).prune

    monkeypatch.setattr(pipeline.Pipeline, "from_preset", staticmethod(from_preset))
    monkeypatch.setattr("verirag.server.run.serve", serve)
    (tmp_path / "a.txt").write_text(ANSWERING)

    def run(*args: str):
        got.clear()
        command = {"ask": ["ask", QUESTION, "--corpus", str(tmp_path)], "demo": ["demo"], "serve": ["serve"]}
        result = CliRunner().invoke(app, [*command[args[0]], *args[1:]], env={"COLUMNS": "200", "NO_COLOR": "1"})
        if "prune" not in got:
            return result
        return got["prune"]

    return run


@pytest.mark.parametrize("command", ["ask", "demo", "serve"])
def test_the_cli_flags_on_every_command(parsed_by_cli, command):
    assert parsed_by_cli(command, "--prune") == SHIPPED  # a flag: the shipped pruner's own threshold
    assert parsed_by_cli(command, "--prune-threshold", "0.3") == PruneSetting(on=True, threshold=0.3)
    assert parsed_by_cli(command, "--prune", "--prune-threshold", "0.3") == PruneSetting(on=True, threshold=0.3)
    assert parsed_by_cli(command, "--no-prune") == OFF
    assert parsed_by_cli(command) == PRUNE_DEFAULT  # none given: the preset's, the one default


@pytest.mark.parametrize("command", ["ask", "demo", "serve"])
def test_bad_cli_prune_options_are_refused(parsed_by_cli, command):
    def refused(*args: str) -> str:
        out = parsed_by_cli(command, *args)
        assert not isinstance(out, PruneSetting) and out.exit_code != 0
        # a VeriragError is printed as one line by `verirag.cli.main`; a click usage error by click
        assert out.exception is None or isinstance(out.exception, (InputError, SystemExit)), out.exception
        return out.output + str(out.exception or "")

    assert "--prune-threshold: must be a number in [0, 1], got 1.5" in refused("--prune-threshold", "1.5")
    assert "not both" in refused("--prune", "--no-prune")
    assert "not both" in refused("--prune-threshold", "0.3", "--no-prune")
    assert "--prune-threshold" in refused("--prune-threshold", "high")  # not a number: click says so
    assert "0.4" in refused("--prune", "0.4")  # --prune is a flag: the old `--prune 0.4` is refused, not misread


@pytest.mark.parametrize("value", [True, False, 0.3, 0.0, 1.0])
def test_cli_http_and_yaml_read_one_value_as_one_setting(value, tmp_path):
    from verirag.server.schemas import AskRequest
    from verirag_lab.experiments.grid.config import parse_config

    flags = (True, None, False) if value is True else (False, None, True) if value is False else (False, value, False)
    cli = cli_prune(*flags)
    http = parse_prune(AskRequest(question="q", prune=value).prune)  # the service's reading of the request
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"id": "1", "question": "q", "answers": ["a"], "passages": [{"text": "t"}]}) + "\n")
    raw = {"datasets": [{"name": "jsonl", "path": str(data)}], "models": ["m"], "methods": ["vanilla"]}
    yaml = parse_config({**raw, "prune": value}).prune
    assert cli == http == yaml == parse_prune(value)


# ---- the answer path with the shipped pruner --------------------------------------------------------
@pytest.fixture(scope="module")
def shipped_pruner():
    from verirag.errors import ModelNotFoundError
    from verirag.learned.pruner_store import shared_pruner

    try:
        return shared_pruner(None)
    except ModelNotFoundError as e:
        pytest.skip(f"no shipped pruner ({e})")


def stand_in(monkeypatch) -> ScriptedLLM:
    """The model every pipeline of the test loads: answers "in 1874", judges it supported."""
    llm = ScriptedLLM(
        "in 1874",
        next_token={"Yes": math.log(0.9), "No": math.log(0.1)},
        name="small",
        capabilities=(LOGPROBS, NEXT_TOKEN, EXACT_NEXT_TOKEN),
    )
    monkeypatch.setattr("verirag.awf.pipeline.load_llm", lambda spec, **kw: llm)
    return llm


def answer_prompt(llm: ScriptedLLM) -> str:
    return json.dumps(next(r.prompt for r in llm.requests if r.op == "generate"))


def ask_json(tmp_path, *flags: str) -> dict:
    from verirag.cli import app

    corpus = tmp_path / "corpus.jsonl"
    corpus.write_text("".join(json.dumps(p.to_dict()) + "\n" for p in PASSAGES))
    args = ["ask", QUESTION, "--corpus", str(corpus), "--model", "small", "--method", "vanilla+nli"]
    result = CliRunner().invoke(app, [*args, "--retrieval", "bm25", "--k", "2", "--json", *flags])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_prune_without_a_value_prunes_at_the_shipped_threshold(monkeypatch, tmp_path, shipped_pruner):
    llm = stand_in(monkeypatch)
    r = ask_json(tmp_path, "--prune")
    assert r["stages"]["prune"]["threshold"] == shipped_pruner.threshold_
    prompt = answer_prompt(llm)
    assert ANSWERING in prompt and UNRELATED not in prompt  # the pruner dropped what does not answer


def test_ask_prunes_when_nothing_is_said(monkeypatch, tmp_path, shipped_pruner):
    llm = stand_in(monkeypatch)
    r = ask_json(tmp_path)  # no flag: PRUNE_DEFAULT, the shipped pruner at its own threshold
    assert r["stages"]["prune"]["threshold"] == shipped_pruner.threshold_
    assert UNRELATED not in answer_prompt(llm)


def test_no_prune_reads_every_sentence(monkeypatch, tmp_path, shipped_pruner):
    llm = stand_in(monkeypatch)
    r = ask_json(tmp_path, "--no-prune")
    assert r["stages"] is None
    prompt = answer_prompt(llm)
    for p in PASSAGES:
        for sentence in p.text.split(". "):
            assert sentence.rstrip(".") in prompt


# ---- the service: one pruner, a bounded cache -------------------------------------------------------
@pytest.fixture()
def service(monkeypatch, tmp_path, shipped_pruner):
    from verirag.learned import pruner_store
    from verirag.learned.pruner import ContextPruner
    from verirag.retrieval import Index
    from verirag.server import ServiceConfig, VeriragService

    stand_in(monkeypatch)
    Index.build(PASSAGES, kind="bm25").save(tmp_path / "index")
    monkeypatch.setattr(pruner_store, "_LOADED", {})  # this process has loaded no pruner yet
    loads = []
    real = ContextPruner.load.__func__
    monkeypatch.setattr(
        ContextPruner, "load", classmethod(lambda cls, *a, **kw: loads.append(a) or real(cls, *a, **kw))
    )
    cfg = ServiceConfig(
        preset="tiny",
        index=tmp_path / "index",
        overrides={"model": "small", "method": "vanilla+nli", "k": 2},
        verify_method="vanilla+nli",
        warm_up=False,
    )
    svc = VeriragService(cfg)
    svc.loads = loads
    return svc


def test_fifty_thresholds_share_one_pruner_and_the_cache_stays_bounded(service):
    from verirag.learned import pruner_store
    from verirag.server import create_app
    from verirag.server.service import PIPELINE_CACHE_SIZE

    thresholds = [round(0.02 * i, 2) for i in range(50)]  # 50 distinct, 0.0 .. 0.98
    with TestClient(create_app(service)) as client:
        for t in thresholds:
            r = client.post("/v1/ask", json={"question": QUESTION, "prune": t})
            assert r.status_code == 200, r.text
            assert r.json()["stages"]["prune"]["threshold"] == t
        on, off = (client.post("/v1/ask", json={"question": QUESTION, "prune": v}).json() for v in (True, False))
    assert len(service.loads) == 1 and pruner_store.loaded_count() == 1  # one pruner, whatever the threshold
    assert on["stages"]["prune"]["threshold"] == service.pipeline.context_pruner.threshold_ and off["stages"] is None
    assert len(service._pipelines) <= PIPELINE_CACHE_SIZE and not service._pipelines  # no pipeline per setting


def test_the_warm_up_loads_the_default_pruner_before_any_request(service):
    assert service.pipeline.config.prune == PRUNE_DEFAULT and PRUNE_DEFAULT.on
    assert not service.loads
    service.ready.clear()  # built without warm-up, it was ready at once: readiness is the warm-up's now
    service.warm_up()
    assert len(service.loads) == 1 and service.ready.is_set()  # the first /v1/ask pays for no loading


def test_a_service_without_an_index_never_loads_the_pruner(service, monkeypatch):
    """It only verifies, and verifying never prunes: its warm-up neither loads the pruner nor waits on it."""
    monkeypatch.setattr(type(service), "has_index", property(lambda self: False))
    service.ready.clear()
    service.warm_up()
    assert not service.loads and service.ready.is_set() and service.load_error is None


def test_pipelines_per_method_are_an_lru_of_the_documented_size(service, monkeypatch):
    from verirag.server import service as service_module

    monkeypatch.setattr(service_module, "PIPELINE_CACHE_SIZE", 2)
    for name in ("vanilla+self_check", "instructrag+nli", "intrinsic", "instructrag+nli"):
        service.pipeline_for(name)
    assert list(service._pipelines) == ["intrinsic", "instructrag+nli"]  # the oldest dropped, the latest last
    assert service.pipeline_for(None) is service.pipeline  # the default is never dropped


@pytest.mark.parametrize("value", ["yes", "0.3", 1.5, -1, [0.3], {"threshold": 0.3}])
def test_bad_http_prune_values_are_a_clear_422(service, value):
    from verirag.server import create_app

    with TestClient(create_app(service)) as client:
        r = client.post("/v1/ask", json={"question": QUESTION, "prune": value})
    assert r.status_code == 422, r.text
    assert "prune" in r.text and "Traceback" not in r.text


# ---- the stage at the edges of its input ------------------------------------------------------------
def stage_run(pruner, passages: list[Passage], threshold=None):
    from verirag.awf.stage_kinds.prune import PruneStage

    hits = [ScoredPassage(p, 1.0, i) for i, p in enumerate(passages)]
    return PruneStage(pruner, threshold).run(QUESTION, hits, lambda _m: None)


def test_a_passage_of_20000_words_is_read_to_its_end(shipped_pruner):
    filler = "The harbour wall was painted grey again that summer."  # 9 words
    long = " ".join([filler] * 2222 + [ANSWERING])  # 20,011 words, the answer last
    r = stage_run(shipped_pruner, [Passage("long", long, "Cape Arrow")])
    [report] = r.info["passages"]
    assert len(report["sentences"]) == 2223 and report["sentences"][-1] == ANSWERING
    assert all(0.0 <= s <= 1.0 for s in report["scores"])  # every sentence scored, the last too
    assert 2222 in report["kept"] and r.kept and r.kept[0].passage.text.strip()


def test_a_blank_passage_is_not_read_and_all_blank_is_an_error(shipped_pruner):
    r = stage_run(shipped_pruner, [Passage("empty", ""), PASSAGES[0], Passage("blank", "  \n ")])
    assert [h.passage.id for h in r.kept] == ["a"]
    assert [p["sentences"] for p in r.info["passages"] if p["id"] != "a"] == [[], []]
    with pytest.raises(InputError, match="all 2 passages are blank"):
        stage_run(shipped_pruner, [Passage("empty", ""), Passage("blank", " ")])


@pytest.mark.parametrize(
    "text",
    [
        "Маяк на мысе Эрроу был построен в 1874 году. Пекарня продаёт ржаной хлеб.",  # Cyrillic
        "Ο φάρος χτίστηκε το 1874. Ο φούρνος πουλά ψωμί.",  # Greek
        "灯台は1874年に港湾局によって建てられた。パン屋はライ麦パンを売っている。" * 40,  # no space, no ". "
    ],
)
def test_a_passage_in_another_script_is_pruned_without_an_empty_context(shipped_pruner, text):
    r = stage_run(shipped_pruner, [Passage("x", text)], threshold=1.0)  # nothing passes: the best one is kept
    [report] = r.info["passages"]
    assert report["sentences"] and all(0.0 <= s <= 1.0 for s in report["scores"])
    assert r.info["fallback"] and r.kept and r.kept[0].passage.text.strip()
