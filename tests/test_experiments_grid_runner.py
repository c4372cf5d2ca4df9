"""The experiment runner: config validation, ground truth, records, resume without repeated calls."""

from __future__ import annotations

import json

import pytest
from doubles import CountingLLM, ScriptedLLM

from verirag.errors import InputError
from verirag.evaluation.ground_truth import GroundTruth, answerable
from verirag.records import ResultRecord, ResultStore
from verirag.types import Example, Passage
from verirag_lab.experiments.grid.config import parse_config

# Our own fixture: three questions about a made-up village, one whose passages do not answer it.
FIXTURE = [
    {
        "id": "q1",
        "question": "What colour is the bridge in Varnholt?",
        "passages": [
            {"id": "p1", "title": "Varnholt", "text": "The bridge in Varnholt is painted green every spring."},
            {"id": "p2", "title": "Weather", "text": "It rains often in the valley."},
        ],
        "references": ["green"],
    },
    {
        "id": "q2",
        "question": "How many mills stand in Varnholt?",
        "passages": [{"id": "p3", "title": "Mills", "text": "Three mills stand beside the river in Varnholt."}],
        "references": ["three", "3"],
    },
    {
        "id": "q3",
        "question": "Who founded Varnholt?",
        "passages": [{"id": "p4", "title": "Market", "text": "The market of Varnholt opens on Saturdays."}],
        "references": ["Ida Berg"],
    },
]


@pytest.fixture()
def fixture_file(tmp_path):
    p = tmp_path / "varnholt.jsonl"
    p.write_text("".join(json.dumps(r) + "\n" for r in FIXTURE))
    return p


def config(path, **over):
    raw = {
        "name": "tiny",
        "datasets": [{"name": "jsonl", "path": str(path)}],
        "models": ["smollm2-135m"],
        "methods": ["vanilla", "vanilla+k_precision", "intrinsic"],
        "generation": {"max_tokens": 24},
        "applications": {"no_rag_fallback": {"models": ["smollm2-135m"], "folds": 2}},
    }
    raw.update(over)
    return parse_config(raw)


# --------------------------------------------------------------------------- config
def test_a_groups_file_keeps_only_the_questions_it_names(fixture_file, tmp_path):
    from verirag_lab.experiments.grid.runner import load_examples

    groups = tmp_path / "held-out.txt"
    groups.write_text("# the verifier's validation questions\njsonl:q1\n\njsonl:q3  # unanswerable\nnq:q2\n")
    ds = {"name": "jsonl", "path": str(fixture_file), "groups": str(groups)}
    got = load_examples(config(fixture_file, datasets=[ds]), None)["jsonl"]
    assert [e.id for e in got] == ["q1", "q3"]  # nq:q2 names another dataset's question
    one = load_examples(config(fixture_file, datasets=[dict(ds, n=1)]), None)["jsonl"]
    assert len(one) == 1 and one[0].id in {"q1", "q3"}  # n draws among the named questions only
    groups.write_text("q1\n")
    with pytest.raises(InputError, match="DATASET:GROUP"):
        load_examples(config(fixture_file, datasets=[ds]), None)
    groups.write_text("nq:1284\n")
    with pytest.raises(InputError, match="names no question of dataset 'jsonl'"):
        load_examples(config(fixture_file, datasets=[ds]), None)
    with pytest.raises(InputError, match="groups file not found"):
        load_examples(config(fixture_file, datasets=[dict(ds, groups=str(tmp_path / "nope.txt"))]), None)


def test_config_lists_every_problem_with_its_place():
    with pytest.raises(InputError) as e:
        parse_config(
            {
                "datasets": [{"name": "nope", "n": 0}],
                "models": ["m"],
                "methods": ["vanilla+nope"],
                "threshold": {"precision": 1.5},
                "colour": "red",
                "applications": {"escalate": {"small": "other", "large": "big", "rate": 2}},
            }
        )
    msg = str(e.value)
    for part in (
        "datasets[0].name",
        "datasets[0].n",
        "methods[0]",
        "threshold",
        "colour: unknown key",
        "applications.escalate.small",
        "applications.escalate.rate",
    ):
        assert part in msg, part


def test_config_adds_the_runs_the_applications_need(fixture_file):
    cfg = config(
        fixture_file,
        applications={
            "no_rag_fallback": {"models": ["smollm2-135m"]},
            "escalate": {"large": "qwen2.5-0.5b", "large_method": "vanilla"},
        },
    )
    runs = {model: [s.label for s in specs] for model, specs in cfg.runs()}
    assert runs["smollm2-135m"] == ["vanilla", "vanilla+k_precision", "intrinsic", "no_context"]
    assert runs["qwen2.5-0.5b"] == ["vanilla"]
    assert cfg.applications["escalate"]["small"] == "smollm2-135m"
    # the application methods are MethodSpecs; for a dataset they get the generation max_tokens
    assert dict(cfg.runs("jsonl"))["smollm2-135m"][-1].options == {"max_tokens": 24}


def test_shipped_configs_are_valid():
    from pathlib import Path

    from verirag_lab.experiments.commands import load_study
    from verirag_lab.experiments.grid.config import load_config

    for p in (Path(__file__).resolve().parents[1] / "configs").glob("*.yaml"):
        load_study(p) or load_config(p)


# --------------------------------------------------------------------------- ground truth
def test_ground_truth_follows_the_paper():
    ex = Example(id="a", question="q", passages=[Passage("p", "The bridge is green.")], references=["green"])
    gt = GroundTruth()
    t = gt.label(ex, "It is green.")
    assert (t.answerable, t.correct, t.faithful, t.abstained) == (1, 1, 1, 0)
    t = gt.label(ex, "__DONT_KNOW__ green")  # an abstention is never correct
    assert (t.correct, t.abstained) == (0, 1)
    unsupported = Example(id="b", question="q", passages=[Passage("p", "Nothing here.")], references=["green"])
    t = gt.label(unsupported, "green")
    assert (t.answerable, t.correct, t.faithful) == (0, 1, 0)  # right from memory, not from the passages
    labelled = Example(id="c", question="q", passages=[Passage("p", "x")], references=["green"], answerable=True)
    assert answerable(labelled) == 1  # relevance labels win over the substring test
    no_refs = Example(id="d", question="q", passages=[Passage("p", "x")], answerable=True)
    t = gt.label(no_refs, "something")
    assert (t.correct, t.details["match_rule"]) == (1, "no_references")


# --------------------------------------------------------------------------- records
def test_store_survives_a_truncated_last_line(tmp_path):
    store = ResultStore(tmp_path)
    rec = ResultRecord(
        dataset="d",
        model="m",
        method="x",
        example_id="1",
        question="q",
        answer="a",
        score=0.5,
        hard=False,
        answerable=1,
        correct=1,
        faithful=1,
    )
    store.append(rec)
    with open(store.path, "a") as f:
        f.write('{"dataset": "d", "model": "m", "meth')  # killed mid-write
    assert [r.key for r in store.load()] == ["d|m|x|1"] and store.skipped_lines == 1
    rec2 = ResultRecord(**{**rec.__dict__, "example_id": "2"})
    store.append(rec2)
    assert {r.key for r in store.load()} == {"d|m|x|1", "d|m|x|2"}


# --------------------------------------------------------------------------- running, with SmolLM2
def factory_for(smollm, cache_path, interrupt_after=None):
    from verirag.llm.cache import RequestCache
    from verirag.llm.cached import CachedLLM

    counting = CountingLLM(smollm, interrupt_after)
    llm = CachedLLM(counting, RequestCache(cache_path))
    return counting, (lambda spec, n_ctx: llm)


@pytest.mark.slow
def test_run_writes_one_valid_record_per_cell(smollm, fixture_file, tmp_path):
    from verirag_lab.experiments.grid.runner import run_experiment

    cfg = config(fixture_file)
    _, factory = factory_for(smollm, tmp_path / "cache.sqlite")
    out = run_experiment(cfg, tmp_path / "run", llm_factory=factory, progress=False)
    recs = ResultStore(tmp_path / "run").load()
    assert out.written == len(recs) == 3 * 4  # 3 methods + no_context for the fallback
    assert json.loads((tmp_path / "run" / "run.json").read_text())["name"] == "tiny"
    for r in recs:
        assert 0.0 <= r.score <= 1.0 and isinstance(r.answer, str)
        assert r.faithful <= r.correct and r.faithful <= r.answerable
        if r.method in ("vanilla", "intrinsic", "no_context"):
            assert r.hard and r.score in (0.0, 1.0)
        assert r.calls >= 0 and r.seconds >= 0
    by_q = {r.example_id: r.answerable for r in recs}
    assert by_q == {"q1": 1, "q2": 1, "q3": 0}
    # every generation was paid once: vanilla and vanilla+k_precision share the answer
    v = {r.example_id: r for r in recs if r.method == "vanilla"}
    kp = {r.example_id: r for r in recs if r.method == "vanilla+k_precision"}
    assert all(v[q].answer == kp[q].answer for q in v)


def test_only_methods_keeps_the_named_methods_and_their_applications(fixture_file):
    cfg = config(fixture_file)
    fast = cfg.only_methods(["vanilla+k_precision"])
    assert [m.label for m in fast.methods] == ["vanilla+k_precision"]
    assert fast.applications == {} and fast.runs() == [("smollm2-135m", fast.methods)]
    assert [m.label for m in cfg.methods] == ["vanilla", "vanilla+k_precision", "intrinsic"]  # a copy
    with_app = cfg.only_methods(["vanilla", "no_context"])
    assert set(with_app.applications) == {"no_rag_fallback"}
    with pytest.raises(InputError, match="'nli'.*its methods: vanilla, vanilla\\+k_precision, intrinsic"):
        cfg.only_methods(["nli"])


@pytest.mark.slow
def test_a_run_of_some_methods_is_resumed_by_the_whole_config(smollm, fixture_file, tmp_path):
    from verirag_lab.experiments.grid.runner import run_experiment

    cfg = config(fixture_file, methods=["vanilla", "vanilla+k_precision"], applications={})
    counting, factory = factory_for(smollm, tmp_path / "c.sqlite")
    fast = cfg.only_methods(["vanilla+k_precision"])
    first = run_experiment(fast, tmp_path / "run", llm_factory=factory, progress=False)
    assert first.written == 3 and {r.method for r in ResultStore(tmp_path / "run").load()} == {"vanilla+k_precision"}
    calls = counting.total
    whole = run_experiment(cfg, tmp_path / "run", llm_factory=factory, progress=False)
    assert (whole.skipped, whole.written) == (3, 3)
    assert counting.total == calls  # vanilla's answers are the ones already made: no new backend call
    answers = {(r.method, r.example_id): r.answer for r in ResultStore(tmp_path / "run").load()}
    assert all(answers["vanilla", q] == answers["vanilla+k_precision", q] for q in ("q1", "q2", "q3"))


@pytest.mark.slow
def test_resume_after_a_kill_repeats_no_backend_call(smollm, fixture_file, tmp_path):
    from verirag_lab.experiments.grid.runner import run_experiment

    cfg = config(fixture_file)
    # reference: one uninterrupted run on a fresh cache
    full, factory = factory_for(smollm, tmp_path / "ref.sqlite")
    run_experiment(cfg, tmp_path / "ref", llm_factory=factory, progress=False)
    assert full.total > 0
    # the same run killed after 4 backend calls, then started again
    first, factory = factory_for(smollm, tmp_path / "c.sqlite", interrupt_after=4)
    with pytest.raises(KeyboardInterrupt):
        run_experiment(cfg, tmp_path / "run", llm_factory=factory, progress=False)
    partial = ResultStore(tmp_path / "run").load()
    assert 0 < len(partial) < 12
    second, factory = factory_for(smollm, tmp_path / "c.sqlite")
    out = run_experiment(cfg, tmp_path / "run", llm_factory=factory, progress=False)
    assert out.skipped == len(partial) and out.written == 12 - len(partial)
    assert (first.total - 1) + second.total == full.total  # the interrupted call was never answered
    ref = {r.key: r.answer for r in ResultStore(tmp_path / "ref").load()}
    got = {r.key: r.answer for r in ResultStore(tmp_path / "run").load()}
    assert got == ref
    # a third run finds everything done and asks the backend nothing
    third, factory = factory_for(smollm, tmp_path / "c.sqlite")
    out = run_experiment(cfg, tmp_path / "run", llm_factory=factory, progress=False)
    assert (out.written, third.total) == (0, 0)


@pytest.mark.slow
def test_a_method_the_backend_cannot_serve_is_a_reported_failure(smollm, fixture_file, tmp_path):
    from verirag_lab.experiments.grid.runner import run_experiment

    _, factory = factory_for(smollm, tmp_path / "c.sqlite")
    factory("smollm2-135m", 0).capabilities = frozenset()  # an endpoint without logprobs
    cfg = config(fixture_file, methods=["vanilla", "vanilla+pre_answering"], applications=None)
    out = run_experiment(cfg, tmp_path / "run", llm_factory=factory, progress=False)
    assert [f["method"] for f in out.failures] == ["vanilla+pre_answering"]
    assert "lacks" in out.failures[0]["error"]
    assert (tmp_path / "run" / "failures.jsonl").exists()
    assert {r.method for r in ResultStore(tmp_path / "run").load()} == {"vanilla"}
    from verirag_lab.experiments.report.awf import build_report

    page = build_report(tmp_path / "run").read_text()
    assert "not run" in page and "vanilla+pre_answering" in page


def test_a_missing_model_fails_its_unit_not_the_grid(fixture_file, tmp_path):
    from verirag.errors import ModelNotFoundError
    from verirag_lab.experiments.grid.runner import run_experiment

    def factory(spec, n_ctx):
        raise ModelNotFoundError(f"no model {spec}")

    cfg = config(fixture_file, applications=None)
    out = run_experiment(cfg, tmp_path / "run", llm_factory=factory, progress=False)
    assert out.written == 0 and out.failures[0]["method"] == "*"
    assert "no model smollm2-135m" in out.failures[0]["error"]


def test_a_directory_of_another_setup_is_refused(fixture_file, tmp_path):
    from verirag_lab.experiments.grid.runner import prepare_dir

    run = tmp_path / "run"
    prepare_dir(config(fixture_file), run)
    (run / "results.jsonl").write_text("")
    with pytest.raises(InputError, match="different set-up"):
        prepare_dir(config(fixture_file, generation={"n_ctx": 1024}), run)


@pytest.mark.slow
def test_changed_method_options_give_new_record_keys(smollm, fixture_file):
    # a record's key names its built method's identity: other options give other keys
    from verirag_lab.experiments.grid.runner import UnitRunner, load_examples, plan

    a, b = config(fixture_file), config(fixture_file, generation={"max_tokens": 99})
    ra, rb = (UnitRunner(c, plan(c, load_examples(c, None))[0], lambda spec, n_ctx: smollm) for c in (a, b))
    ex = ra.unit.examples[0]
    assert {ra.key(m, ex) for m in ra.methods}.isdisjoint({rb.key(m, ex) for m in rb.methods})
    assert list(ra.methods) == list(rb.methods)


@pytest.mark.slow
def test_a_resumed_run_after_a_prompt_edit_recomputes_what_reads_that_prompt(
    smollm, fixture_file, tmp_path, monkeypatch
):
    from verirag.awf.generators import vanilla
    from verirag.prompts import load_prompt
    from verirag_lab.experiments.grid.runner import run_experiment

    cfg = config(fixture_file, applications=None)
    _, factory = factory_for(smollm, tmp_path / "cache.sqlite")
    assert run_experiment(cfg, tmp_path / "run", llm_factory=factory, progress=False).written == 9
    edited = load_prompt("vanilla", "shared")
    monkeypatch.setattr(
        vanilla,
        "load_prompt",
        lambda *a, **k: type(edited)(
            edited.name, edited.user + " Answer in a few words.", edited.system, edited.source, edited.extra
        ),
    )
    out = run_experiment(cfg, tmp_path / "run", llm_factory=factory, progress=False)
    # vanilla and vanilla+k_precision read the edited prompt; intrinsic does not
    assert (out.recomputed, out.written, out.skipped) == (6, 6, 3)
    recs = ResultStore(tmp_path / "run").load()
    assert len(recs) == 9  # the latest record of each slot, not both
    again = run_experiment(cfg, tmp_path / "run", llm_factory=factory, progress=False)
    assert (again.written, again.skipped) == (0, 9)


@pytest.mark.slow
def test_ray_executor_gives_the_records_of_a_local_run(fixture_file, tmp_path):
    pytest.importorskip("ray", reason="Ray is an optional extra: pip install 'verirag[ray]'")
    from verirag_lab.experiments.grid.runner import run_experiment

    cfg = config(fixture_file, methods=["vanilla", "vanilla+k_precision"], applications=None)
    local = run_experiment(cfg, tmp_path / "local", progress=False)
    assert local.written == 6
    remote = run_experiment(cfg, tmp_path / "ray", executor="ray", progress=False)
    assert remote.written == 6 and not remote.failures
    a = {r.key: (r.answer, r.score) for r in ResultStore(tmp_path / "local").load()}
    b = {r.key: (r.answer, r.score) for r in ResultStore(tmp_path / "ray").load()}
    assert a == b


def test_unknown_executor_is_an_input_error(fixture_file, tmp_path):
    from verirag_lab.experiments.grid.executors import get_executor

    with pytest.raises(InputError, match="unknown executor"):
        get_executor("dask")


def echo_endpoint() -> ScriptedLLM:
    """A stand-in HTTP model (the test is about concurrency bookkeeping, not answers): it answers
    with the last word of the prompt, after a short wait."""
    return ScriptedLLM(
        lambda prompt: prompt[-1]["content"].strip().split()[-1] if isinstance(prompt, list) else "x",
        name="echo",
        backend="openai",
        prompt_tokens=10,
        completion_tokens=1,
        delay=0.05,
    )


def test_http_models_run_examples_concurrently_with_per_record_usage(fixture_file, tmp_path):
    from verirag_lab.experiments.grid.runner import run_experiment

    endpoint = echo_endpoint()
    cfg = config(fixture_file, methods=["vanilla", "vanilla+k_precision"], applications=None, concurrency=3)
    out = run_experiment(cfg, tmp_path / "run", llm_factory=lambda spec, n_ctx: endpoint, progress=False)
    recs = ResultStore(tmp_path / "run").load()
    assert out.written == len(recs) == 6 and endpoint.max_in_flight > 1
    by = {(r.example_id, r.method): r for r in recs}
    for q in ("q1", "q2", "q3"):
        # each record carries the generation it used; the run paid it once, in every thread
        kp = by[(q, "vanilla+k_precision")]
        assert (by[(q, "vanilla")].calls, by[(q, "vanilla")].prompt_tokens) == (1, 10)
        assert (kp.calls, kp.prompt_tokens, kp.details["shared"]["calls"]) == (1, 10, 1)
        assert by[(q, "vanilla")].spent["calls"] + kp.spent["calls"] == 1


@pytest.mark.slow
@pytest.mark.parametrize("layout", ["paper", "shared"])
def test_records_are_identical_with_prefix_reuse_on_and_off(smollm_path, fixture_file, tmp_path, layout):
    """Prefix reuse changes what is read, never a number: the grid's records are equal with it on
    and off (uncached backends; a small n_batch so that these short prompts share whole batches)."""
    from verirag.llm.llama_cpp_backend import LlamaCppLLM
    from verirag_lab.experiments.grid.runner import run_experiment

    methods = [
        "vanilla",
        "vanilla+pre_answering",
        "vanilla+nli",
        "vanilla+llm_judge",
        "vanilla+self_check",
        "instructrag+nli",
        "intrinsic",
        "dual_generation",
    ]
    cfg = config(
        fixture_file,
        methods=methods,
        applications=None,
        datasets=[{"name": "jsonl", "path": str(fixture_file), "method_options": {"layout": layout}}],
    )
    records, llms = {}, {}
    for reuse in (False, True):
        llm = LlamaCppLLM(smollm_path, model_id="smollm2-135m", n_ctx=2048, n_batch=16, reuse_prefix=reuse)
        llms[reuse] = llm
        out = run_experiment(
            cfg, tmp_path / f"reuse{reuse}", llm_factory=lambda spec, n_ctx, llm=llm: llm, progress=False
        )
        assert out.written == 3 * len(methods) and not out.failures
        records[reuse] = {
            r.key: (r.answer, r.score, r.error, r.details.get("decision"))
            for r in ResultStore(tmp_path / f"reuse{reuse}").load()
        }
    assert records[True] == records[False]
    assert llms[True].tokens_reused > 0 and llms[False].tokens_reused == 0
    assert llms[True].tokens_evaluated < llms[False].tokens_evaluated
    for llm in llms.values():
        llm.close()
