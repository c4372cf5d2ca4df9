"""A stage a user writes (`verirag.awf.user_stages`) runs in `ask`, the service and the grid without
editing verirag. The stage is the one the guide shows (docs/how-to/write-a-stage.md), taken from
the guide itself, so the guide's code is what is tested."""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from verirag.awf.answer_spec import AnswerSpec
from verirag.awf.pipeline import PipelineConfig
from verirag.awf.stages import StageResult
from verirag.awf.user_stages import build_stages, parse_stage, stages_digest
from verirag.errors import InputError

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "how-to" / "write-a-stage.md"
USE = "my_stages:DropShortPassages"
LONG = [
    "Halvorsen Lighthouse was designed by the engineer Maren Solberg and first lit in the autumn of 1871.",
    "The ferry to the island leaves the harbour twice a day in summer and once a day in winter.",
]
SHORT = ["Halvorsen Lighthouse.", "Who designed Halvorsen Lighthouse?"]


def guide_stage_code() -> str:
    return re.findall(r"```python\n(.*?)```", GUIDE.read_text(encoding="utf-8"), re.S)[0]


@pytest.fixture
def stage_dir(tmp_path, monkeypatch) -> Path:
    """The guide's my_stages.py in a folder of its own, importable (a fresh import each test)."""
    folder = tmp_path / "stages"
    folder.mkdir()
    (folder / "my_stages.py").write_text(guide_stage_code(), encoding="utf-8")
    monkeypatch.setattr(sys, "path", list(sys.path))
    monkeypatch.delitem(sys.modules, "my_stages", raising=False)
    return folder


@pytest.fixture
def on_path(stage_dir, monkeypatch) -> Path:
    monkeypatch.syspath_prepend(str(stage_dir))
    return stage_dir


def _hits(texts):
    from verirag.types import Passage, ScoredPassage

    return [ScoredPassage(Passage(f"p{i}", t), 1.0 - i / 10, i) for i, t in enumerate(texts)]


# ---- the stage reference: parsing, loading, checking ------------------------------------------------
def test_the_command_line_form_reads_options_as_json_where_they_parse():
    ref = parse_stage("my_stages:DropShortPassages, min_words=12,label=short")
    assert ref.use == USE and ref.options == {"min_words": 12, "label": "short"}
    assert parse_stage("a.b:C,x=0.5,y=true,z=text").options == {"x": 0.5, "y": True, "z": "text"}
    assert parse_stage("a:B,ids=[1, 2],x=3").options == {"ids": [1, 2], "x": 3}  # a value may hold commas
    with pytest.raises(InputError, match="options are key=value"):
        parse_stage("a:B,oops")
    with pytest.raises(InputError, match="module:Class"):
        parse_stage("no_colon")


def test_the_guide_stage_filters_and_reports(on_path):
    (stage,) = build_stages(AnswerSpec(stages=[{"use": USE, "options": {"min_words": 5}}]).resolve().stages)
    said = []
    result = stage.run("Who designed it?", _hits([LONG[0], SHORT[0], LONG[1]]), said.append)
    assert isinstance(result, StageResult) and [h.passage.id for h in result.kept] == ["p0", "p2"]
    assert result.info == {"min_words": 5, "dropped": ["p1"]} and said


@pytest.mark.parametrize(
    ("stage", "problem"),
    [
        ({"use": "no_such_module_here:X"}, "cannot import 'no_such_module_here'.*current directory or on PYTHONPATH"),
        ({"use": "my_stages:Nope"}, "module 'my_stages' has no 'Nope'"),
        ({"use": "my_stages:BaseModel"}, "needs a `name` \\(text\\) and a `run"),
        ({"use": "json:dumps"}, "'dumps' is not a class"),
        ({"use": USE, "options": {"min_words": 0}}, "bad options \\(min_words: Input should be greater"),
        ({"use": USE, "options": {"max_words": 3}}, "no option 'max_words' \\(it takes min_words\\)"),
        ({"use": "bad"}, "stages.0.use must name a class as module:Class, got 'bad'"),
    ],
)
def test_a_bad_stage_is_an_input_error_when_the_spec_resolves(on_path, stage, problem):
    with pytest.raises(InputError, match=problem):
        AnswerSpec(stages=[stage]).resolve()


def test_two_stages_of_one_name_or_a_built_in_name_are_refused_when_the_spec_resolves(on_path, stage_dir):
    with pytest.raises(InputError, match="two stages share the name 'drop_short'"):
        AnswerSpec(stages=[{"use": USE}, {"use": USE, "options": {"min_words": 3}}]).resolve()
    (stage_dir / "named_prune.py").write_text(guide_stage_code().replace('name = "drop_short"', 'name = "prune"'))
    with pytest.raises(InputError, match="may not be named 'prune'"):
        AnswerSpec(stages=[{"use": "named_prune:DropShortPassages"}]).resolve()


def test_a_stage_that_fails_is_an_input_error_naming_it(on_path, stage_dir):
    (stage_dir / "broken_stage.py").write_text(
        "class Broken:\n    name = 'broken'\n    def run(self, question, hits, say):\n        return 1 / 0\n"
    )
    (stage,) = build_stages(AnswerSpec(stages=[{"use": "broken_stage:Broken"}]).resolve().stages)
    with pytest.raises(InputError, match="stage broken_stage:Broken failed: ZeroDivisionError"):
        stage.run("q?", _hits(LONG), lambda _m: None)
    (stage_dir / "bad_syntax.py").write_text("def oops(:\n")
    with pytest.raises(InputError, match="importing 'bad_syntax' failed: SyntaxError"):
        AnswerSpec(stages=[{"use": "bad_syntax:X"}]).resolve()


def test_the_identity_names_class_options_and_version(on_path):
    one = AnswerSpec(stages=[{"use": USE, "options": {"min_words": 5}}]).resolve()
    other = AnswerSpec(stages=[{"use": USE, "options": {"min_words": 6}}]).resolve()
    assert stages_digest(()) == "" and stages_digest(one.stages) != stages_digest(other.stages)
    assert one.digest() != other.digest() != AnswerSpec().digest()
    assert one.stages[0].identity()["version"] == "1"
    assert AnswerSpec.from_config(PipelineConfig.from_spec(one)).digest() == one.digest()  # the config says the same


# ---- ask, the service and the grid run it ----------------------------------------------------------
def _corpus(folder: Path) -> Path:
    folder.mkdir()
    for i, text in enumerate(LONG + SHORT):
        (folder / f"{i}.txt").write_text(text, encoding="utf-8")
    return folder


@pytest.mark.slow
def test_ask_runs_the_stage_from_the_current_directory(stage_dir, tmp_path, monkeypatch):
    """`verirag ask --stage` as a user runs it: the module in the folder they run verirag from."""
    from verirag.cli import app

    corpus = _corpus(tmp_path / "docs")
    monkeypatch.chdir(stage_dir)
    args = ["ask", "Who designed Halvorsen Lighthouse?", "--corpus", str(corpus), "--preset", "tiny", "--json"]
    args += ["--retrieval", "bm25", "--k", "4", "--stage", f"{USE},min_words=5"]
    r = CliRunner().invoke(app, args)
    assert r.exit_code == 0, r.output
    answer = json.loads(r.stdout.strip().splitlines()[-1])
    report = answer["stages"]["drop_short"]
    assert report["min_words"] == 5 and len(report["dropped"]) == 2
    assert {e["id"] for e in answer["evidence"]}.isdisjoint(report["dropped"]) and answer["evidence"]
    bad = CliRunner().invoke(app, [*args[:-1], "my_stages:DropShortPassages,min_words=0"])
    assert isinstance(bad.exception, InputError) and "greater than or equal to 1" in str(bad.exception)


@pytest.mark.slow
def test_the_python_door_runs_the_stage(on_path, tmp_path):
    """The guide's Python block, on the smallest model: the spec names the stage, the answer reports it."""
    from verirag import AnswerSpec, Pipeline

    spec = AnswerSpec(preset="tiny", retrieval="bm25", k=4, stages=[{"use": USE, "options": {"min_words": 5}}])
    pipeline = Pipeline(spec)
    pipeline.index(_corpus(tmp_path / "docs"))
    result = pipeline.ask("Who designed Halvorsen Lighthouse?")
    assert result.stages["drop_short"]["min_words"] == 5 and len(result.stages["drop_short"]["dropped"]) == 2
    assert {e.id for e in result.evidence}.isdisjoint(result.stages["drop_short"]["dropped"])


def test_serve_takes_the_stage_option(on_path, monkeypatch):
    """`verirag serve --stage` puts the stage in the service's spec (the service test runs it)."""
    import verirag.server.run
    from verirag.cli import app

    seen = {}
    monkeypatch.setattr(verirag.server.run, "serve", lambda cfg, **_kw: seen.update(stages=cfg.overrides["stages"]))
    r = CliRunner().invoke(app, ["serve", "--preset", "tiny", "--stage", f"{USE},min_words=7"])
    assert r.exit_code == 0, r.output
    assert seen["stages"] == (parse_stage(f"{USE},min_words=7"),)


@pytest.mark.slow
def test_the_service_runs_its_stages_and_no_client_names_one(on_path, tmp_path):
    import httpx
    from test_client import serving

    from verirag.client import VeriragClient
    from verirag.errors import BackendError
    from verirag.retrieval import Index, load_corpus
    from verirag.server import ServiceConfig, VeriragService

    index = tmp_path / "index"
    Index.build(load_corpus(_corpus(tmp_path / "docs")).passages, kind="bm25").save(index)
    stages = (parse_stage(f"{USE},min_words=5"),)
    service = VeriragService(ServiceConfig(preset="tiny", index=index, overrides={"stages": stages}))
    with serving(service) as url, VeriragClient(url, timeout=600) as client:
        deadline = time.time() + 300
        while True:  # the models load in the background
            try:
                client.health()
                break
            except BackendError:
                assert time.time() < deadline, "the service did not get ready"
                time.sleep(0.2)
        answer = client.ask("Who designed Halvorsen Lighthouse?", k=4, threshold=0.0)
        assert len(answer.stages["drop_short"]["dropped"]) == 2
        assert {e.id for e in answer.evidence}.isdisjoint(answer.stages["drop_short"]["dropped"])
        refused = httpx.post(f"{url}/v1/ask", json={"question": "q?", "stages": [{"use": USE}]}, timeout=60)
        assert refused.status_code == 422


@pytest.mark.slow
def test_the_grid_runs_the_stage_and_its_options_are_in_the_key(on_path, tmp_path):
    from verirag.records import ResultStore
    from verirag_lab.experiments.grid.config import parse_config
    from verirag_lab.experiments.grid.runner import run_experiment

    data = tmp_path / "q.jsonl"
    row = {
        "id": "q1",
        "question": "Who designed Halvorsen Lighthouse?",
        "passages": [{"title": "a", "text": LONG[0]}, {"title": "b", "text": SHORT[0]}],
        "references": ["Maren Solberg"],
    }
    data.write_text(json.dumps(row) + "\n", encoding="utf-8")

    def run(min_words: int):
        raw = {
            "name": "stages",
            "datasets": [{"name": "jsonl", "path": str(data)}],
            "models": ["smollm2-135m"],
            "methods": ["vanilla"],
            "generation": {"max_tokens": 16},
            "stages": [{"use": USE, "options": {"min_words": min_words}}],
        }
        run_experiment(parse_config(raw), tmp_path / "run")
        return list(ResultStore(tmp_path / "run").load())

    (first,) = run(5)
    report = first.details["stages"]["drop_short"]
    assert report["min_words"] == 5 and len(report["dropped"]) == 1
    assert "|stages:" in first.key and first.stages_digest
    assert run(5)[0].key == first.key  # the rerun reads the record, nothing recomputed
    (second,) = run(50)  # other options: another key, recomputed
    assert second.key != first.key and second.details["stages"]["drop_short"]["min_words"] == 50
    (on_path / "broken_grid.py").write_text(
        "class Broken:\n    name = 'broken'\n    def run(self, question, hits, say):\n        return 1 / 0\n"
    )
    raw = {
        "name": "broken",
        "datasets": [{"name": "jsonl", "path": str(data)}],
        "models": ["smollm2-135m"],
        "methods": ["vanilla"],
        "stages": [{"use": "broken_grid:Broken"}],
    }
    run_experiment(parse_config(raw), tmp_path / "broken")  # the run goes on: the example's record says why
    (failed,) = ResultStore(tmp_path / "broken").load()
    assert failed.error and "stage broken_grid:Broken failed: ZeroDivisionError" in failed.error
