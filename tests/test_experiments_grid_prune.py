"""`verirag eval` with the context pruner (issue 37): the config's `prune` section, each example's
passages pruned once before its methods, the report in every record, and the pruning in the key."""

from __future__ import annotations

import json
import shutil

import pytest
from doubles import ScriptedLLM

from verirag.awf.stage_kinds.prune import OFF, PRUNE_DEFAULT
from verirag.errors import InputError
from verirag.records import ResultStore
from verirag_lab.experiments.grid.config import parse_config

# Our own fixture: each answering sentence sits beside one that does not answer.
FIXTURE = [
    {
        "id": "q1",
        "question": "What colour is the bridge in Varnholt?",
        "passages": [
            {
                "id": "p1",
                "title": "Varnholt",
                "text": "The bridge in Varnholt is painted green every spring. The town hall faces the market square.",
            },
            {"id": "p2", "title": "Weather", "text": "It rains often in the valley. Farmers grow barley on the hills."},
        ],
        "references": ["green"],
    },
    {
        "id": "q2",
        "question": "How many mills stand in Varnholt?",
        "passages": [
            {
                "id": "p3",
                "title": "Mills",
                "text": "Three mills stand beside the river in Varnholt. The baker sells rye bread on Sundays.",
            }
        ],
        "references": ["three", "3"],
    },
    {
        "id": "q3",
        "question": "Who founded Varnholt?",
        "passages": [
            {
                "id": "p4",
                "title": "Market",
                "text": "The market of Varnholt opens on Saturdays. Fishing boats leave at dawn.",
            }
        ],
        "references": ["Ida Berg"],
    },
]
REPORT = {"threshold", "fallback", "passages", "tokens_read", "tokens_saved", "reference_kept"}
PASSAGE_REPORT = {"id", "title", "sentences", "kept", "hop", "scores", "tokens_read", "tokens_saved"}


@pytest.fixture()
def fixture_file(tmp_path):
    p = tmp_path / "varnholt.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in FIXTURE))
    return p


def config(path, **over):
    raw = {
        "name": "prune",
        "datasets": [{"name": "jsonl", "path": str(path)}],
        "models": ["smollm2-135m"],
        "methods": ["vanilla", "vanilla+k_precision"],
        "generation": {"max_tokens": 24},
    }
    raw.update(over)
    return parse_config(raw)


# --------------------------------------------------------------------------- the config section
@pytest.mark.parametrize(
    "value, parsed",
    [
        (None, None),
        (False, None),
        (True, {"threshold": None, "pruner": None}),
        (0.3, {"threshold": 0.3, "pruner": None}),
        (1, {"threshold": 1.0, "pruner": None}),
        ({}, {"threshold": None, "pruner": None}),
        ({"threshold": 0.3}, {"threshold": 0.3, "pruner": None}),
        ({"threshold": None, "pruner": None}, {"threshold": None, "pruner": None}),
    ],
)
def test_prune_values(fixture_file, value, parsed):
    cfg = config(fixture_file, prune=value)
    assert cfg.prune.to_json() == parsed and cfg.prune.on == (parsed is not None)
    assert cfg.run_json()["prune"] == parsed
    # absent or null: off in the grid, whatever the product's default (a config says what it measures)
    assert config(fixture_file).prune == OFF and config(fixture_file, prune=None).prune == OFF
    assert PRUNE_DEFAULT.on and config(fixture_file).run_json()["prune"] is None


def test_prune_names_a_saved_pruner_folder(fixture_file, tmp_path):
    folder = tmp_path / "my-pruner"
    with pytest.raises(InputError, match=r"prune\.pruner: no saved context pruner in .*my-pruner.*pruner\.json"):
        config(fixture_file, prune={"pruner": str(folder)})
    folder.mkdir()
    (folder / "pruner.json").write_text("{}")  # the file is read when the run starts, not here
    assert config(fixture_file, prune={"threshold": 0.5, "pruner": str(folder)}).prune.to_json() == {
        "threshold": 0.5,
        "pruner": str(folder),
    }


@pytest.mark.parametrize(
    "value, says",
    [
        (
            "yes",
            "prune: must be true, false, a threshold in [0, 1] or a mapping {threshold: T, pruner: DIR}, got 'yes'",
        ),
        ([0.3], "prune: must be true, false, a threshold in [0, 1] or a mapping"),
        (1.5, "prune: must be a number in [0, 1], got 1.5"),
        (-0.1, "prune: must be a number in [0, 1], got -0.1"),
        ({"threshold": "high"}, "prune.threshold: must be a number in [0, 1], got 'high'"),
        ({"threshold": True}, "prune.threshold: must be a number in [0, 1], got true"),
        ({"thresold": 0.3}, "prune.thresold: unknown key"),
        ({"pruner": ""}, "prune.pruner: must name a folder"),
        ({"pruner": 3}, "prune.pruner"),
    ],
)
def test_bad_prune_values_name_their_place(fixture_file, value, says):
    with pytest.raises(InputError) as e:
        config(fixture_file, prune=value)
    assert says in str(e.value)


def test_the_shipped_prune_config_turns_pruning_on():
    from pathlib import Path

    from verirag_lab.experiments.grid.config import load_config

    cfg = load_config(Path(__file__).resolve().parents[1] / "configs" / "prune-small.yaml")
    assert cfg.prune.to_json() == {"threshold": None, "pruner": None}


# --------------------------------------------------------------------------- a pruned run
@pytest.fixture(scope="module")
def shipped_pruner():
    from verirag.errors import ModelNotFoundError
    from verirag.learned.shipped import shipped_pruner_dir

    try:
        return shipped_pruner_dir()
    except ModelNotFoundError as e:
        pytest.skip(f"no shipped pruner yet ({e})")


def scripted():
    llm = ScriptedLLM("green", logprob=-0.1, name="smollm2-135m")
    return llm, (lambda spec, n_ctx: llm)


def test_each_example_is_pruned_once_and_its_methods_read_the_pruned_passages(
    fixture_file, tmp_path, shipped_pruner, monkeypatch
):
    from verirag_lab.experiments.grid.runner import load_pruner, run_experiment

    pruner = load_pruner(None)
    calls = []
    real = pruner.prune
    monkeypatch.setattr(pruner, "prune", lambda q, p, t=None, titles=None: calls.append(q) or real(q, p, t, titles))
    llm, factory = scripted()
    cfg = config(fixture_file, prune={"threshold": 0.7})
    out = run_experiment(cfg, tmp_path / "run", llm_factory=factory, progress=False)
    assert out.written == 6 and not out.failures
    assert sorted(calls) == sorted(e["question"] for e in FIXTURE)  # once per example, not per method
    recs = ResultStore(tmp_path / "run").load()
    by_q: dict[str, list] = {}
    for r in recs:
        by_q.setdefault(r.example_id, []).append(r)
        report = r.details["prune"]
        assert set(report) == REPORT and report["threshold"] == 0.7
        for p in report["passages"]:
            assert set(p) == PASSAGE_REPORT
            assert all(s >= 0.7 for i, s in enumerate(p["scores"]) if i in p["kept"]) or report["fallback"] or p["hop"]
        assert report["tokens_read"] == sum(p["tokens_read"] for p in report["passages"])
        assert r.kind_digests["prune"] and r.key.endswith(f"|prune:{r.kind_digests['prune']}")
    for recs_of_q in by_q.values():  # the methods of an example share one pruning
        assert recs_of_q[0].details["prune"] == recs_of_q[1].details["prune"]
    assert sum(r.details["prune"]["tokens_saved"] for r in recs) > 0  # something was dropped
    # the answering prompts hold the kept sentences, never a dropped one, and no passage with none kept
    prompts = [json.dumps(p) for p in llm.prompts]
    for q, recs_of_q in by_q.items():
        question = next(e["question"] for e in FIXTURE if e["id"] == q)
        prompt = next(p for p in prompts if question in p)
        for p in recs_of_q[0].details["prune"]["passages"]:
            for i, sentence in enumerate(p["sentences"]):
                assert (sentence in prompt) == (i in p["kept"]), (q, sentence)
            assert (p["title"] in prompt) == bool(p["kept"])
    # nothing in q3 answers: at 0.7 the pruner keeps its best sentence rather than an empty context
    q3 = by_q["q3"][0].details["prune"]
    assert sum(len(p["kept"]) for p in q3["passages"]) >= 1 and q3["reference_kept"] is False
    # the run's summary: the passage tokens read and saved per answer, per method
    from verirag_lab.experiments.grid.summary import summarize

    for row in summarize(recs, {"bootstrap": {"n_resamples": 20}}):
        reports = [r.details["prune"] for r in recs if r.method == row["method"]]
        saved = sum(p["tokens_saved"] for p in reports)
        assert row["prune_tokens_saved_per_question"] == pytest.approx(saved / len(reports))
        assert row["prune_saved_share"] == pytest.approx(
            saved / sum(p["tokens_read"] + p["tokens_saved"] for p in reports)
        )


def test_other_pruning_never_reuses_records(fixture_file, tmp_path, shipped_pruner):
    from verirag_lab.experiments.grid.runner import run_experiment

    _, factory = scripted()
    run = tmp_path / "run"

    def go(**over):
        out = run_experiment(config(fixture_file, **over), run, llm_factory=factory, progress=False)
        return out.written, out.skipped, out.recomputed

    assert go() == (6, 0, 0)  # no pruning
    assert {str(r.kind_digests) for r in ResultStore(run).load()} == {"{}"}
    assert go(prune=True) == (6, 0, 6)  # pruning on: every record again
    fitted = {r.key for r in ResultStore(run).load()}
    assert go(prune=True) == (0, 6, 0)  # the same pruning: nothing to do
    # the fitted threshold named as a number is the same pruning
    threshold = ResultStore(run).load()[0].details["prune"]["threshold"]
    assert go(prune={"threshold": threshold}) == (0, 6, 0)
    assert go(prune=0.7) == (6, 0, 6)  # another threshold
    # another pruner (the shipped one recalibrated: another temperature) at the same threshold
    other = tmp_path / "recalibrated"
    shutil.copytree(shipped_pruner, other)
    meta = json.loads((other / "pruner.json").read_text())
    meta["state"]["temperature_"] *= 1.5
    (other / "pruner.json").write_text(json.dumps(meta))
    assert go(prune={"threshold": 0.7, "pruner": str(other)}) == (6, 0, 6)
    keys = {r.key for r in ResultStore(run).load()}
    assert keys.isdisjoint(fitted)
    assert go() == (6, 0, 6)  # pruning off again: the latest records are pruned ones, so recomputed
    assert json.loads((run / "run.json").read_text())["prune"] is None


def test_a_missing_pruner_fails_the_run_before_it_starts(fixture_file, tmp_path):
    from verirag_lab.experiments.grid.runner import run_experiment

    folder = tmp_path / "broken"
    folder.mkdir()
    (folder / "pruner.json").write_text("not json")
    _, factory = scripted()
    with pytest.raises(InputError, match="context pruner"):
        run_experiment(config(fixture_file, prune={"pruner": str(folder)}), tmp_path / "run", llm_factory=factory)
    assert not (tmp_path / "run").exists()


@pytest.mark.slow
def test_smollm_reads_fewer_prompt_tokens_with_pruning(smollm, fixture_file, tmp_path, shipped_pruner):
    from verirag_lab.experiments.grid.runner import run_experiment

    factory = lambda spec, n_ctx: smollm  # noqa: E731
    # a threshold, not the shipped one: on these two-sentence made-up passages the shipped pruner's low
    # conservative threshold keeps every sentence (its model card, "Known weaknesses")
    on = config(fixture_file, methods=["vanilla"], prune=0.3)
    off = config(fixture_file, methods=["vanilla"])
    assert run_experiment(on, tmp_path / "on", llm_factory=factory, progress=False).written == 3
    assert run_experiment(off, tmp_path / "off", llm_factory=factory, progress=False).written == 3
    pruned, full = ResultStore(tmp_path / "on").load(), ResultStore(tmp_path / "off").load()
    for r in pruned:
        assert set(r.details["prune"]) == REPORT
        assert r.details["prune"]["tokens_read"] > 0
        assert isinstance(r.answer, str) and 0.0 <= r.score <= 1.0
    assert all("prune" not in r.details and not r.kind_digests for r in full)
    assert sum(r.prompt_tokens for r in pruned) < sum(r.prompt_tokens for r in full)
    # the tokens counted are the answering model's: what pruning saved of the passages' tokens
    saved = sum(r.details["prune"]["tokens_saved"] for r in pruned)
    assert saved > 0
    assert sum(r.prompt_tokens for r in full) - sum(r.prompt_tokens for r in pruned) == pytest.approx(saved, rel=0.5)


def test_a_record_written_with_its_pruning_digest_in_a_field_of_its_own_keeps_its_key():
    """Records before `kind_digests` named the pruning in `prune_digest`: read back, the key is the
    one it was written under, so a resumed run neither recomputes it nor takes it for an unpruned one."""
    from verirag.records import ResultRecord, record_key

    fields = {
        "dataset": "d",
        "model": "m",
        "method": "x",
        "example_id": "e",
        "question": "q",
        "answer": "a",
        "score": 0.5,
    }
    fields |= {"hard": False, "answerable": 1, "correct": 1, "faithful": 1, "method_digest": "md"}
    old = ResultRecord.from_dict({**fields, "prune_digest": "abc"})
    assert old.key == "d|m|x|e|md|prune:abc" == record_key("d", "m", "x", "e", "md", {"prune": "abc"})
    assert ResultRecord.from_dict({**fields, "prune_digest": ""}).key == "d|m|x|e|md"
    assert ResultRecord.from_dict(old.to_dict()).key == old.key  # and as written today
