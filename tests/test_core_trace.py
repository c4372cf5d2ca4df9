"""The core computes each thing once, under its true name: provenance-keyed trace, memoised
failures, attributed costs, the delegating LLM wrappers, options as part of a method's identity.
Stand-in LLMs here are bookkeeping probes (the tests are about the trace and the wrappers, not a
model); the warm-rerun test runs the real SmolLM2-135M."""

from __future__ import annotations

import json
import math

import pytest
from doubles import ScriptedLLM
from test_llm_openai import _chat_reply, fake  # noqa: F401 - the scripted HTTP server fixture

from verirag.awf.compose import build_method
from verirag.awf.pipeline import Pipeline, PipelineConfig
from verirag.awf.spec import MethodSpec, accepted_options
from verirag.awf.trace import Trace
from verirag.errors import BackendError, InputError
from verirag.llm.base import LLM
from verirag.llm.cache import RequestCache
from verirag.llm.cached import CachedLLM
from verirag.llm.metered import MeteredLLM
from verirag.llm.usage import Usage, metering
from verirag.llm.wrapper import LLMWrapper, interface_members
from verirag.retrieval import Index
from verirag.types import Passage

PASSAGES = [
    Passage("a", "The Harbour Ferry crosses the bay in 25 minutes.", title="Ferry"),
    Passage("b", "Puffins nest on the cliffs in April."),
]
QUESTION = "How long does the Harbour Ferry take to cross the bay?"


def probe_llm(name="probe", text="25 minutes", fail=None) -> ScriptedLLM:
    """Records requests; every prompt costs 10 tokens, every generation 3; answers `text`, or raises
    `fail`; has attention maps, a capability only this backend has."""
    llm = ScriptedLLM(
        text if fail is None else fail,
        next_token={"Yes": math.log(0.8), "No": math.log(0.2), "I": math.log(0.1)},
        score=-1.0,
        name=name,
        backend="probe",
        prompt_tokens=10,
        completion_tokens=3,
    )
    llm.attentions = lambda prompt: "attention maps"
    return llm


# ---------------------------------------------------------------------------------------- trace
def test_a_failure_is_memoised_like_a_value():
    llm = probe_llm(fail=BackendError("HTTP 400: bad request"))
    trace = Trace(QUESTION, PASSAGES)
    m = build_method("vanilla+llm_judge", llm)
    first = m.run(trace)
    second = m.run(trace)
    assert "HTTP 400" in first.error and first.error == second.error
    assert llm.ops == ["generate"]  # asked again, the trace raised the remembered error


def test_a_programming_error_is_not_recorded_as_a_model_failure():
    llm = probe_llm(fail=TypeError("a bug"))
    with pytest.raises(TypeError):
        build_method("vanilla", llm).run(Trace(QUESTION, PASSAGES))


def test_two_llms_on_one_trace_keep_their_own_answers():
    a, b = probe_llm("model-a", text="25 minutes"), probe_llm("model-b", text="half an hour")
    trace = Trace(QUESTION, PASSAGES)
    assert build_method("vanilla", a).run(trace).answer == "25 minutes"
    assert build_method("vanilla", b).run(trace).answer == "half an hour"
    assert build_method("vanilla+k_precision", a).run(trace).answer == "25 minutes"
    assert a.ops == ["generate"] and b.ops == ["generate"]


def test_options_change_the_key_and_equal_options_share():
    llm = probe_llm()
    trace = Trace(QUESTION, PASSAGES)
    build_method("instructrag", llm, family="open_domain").run(trace)
    build_method("instructrag+k_precision", llm).run(trace)  # the default family: same options
    assert llm.ops == ["generate"]
    build_method("instructrag", llm, family="multi_hop").run(trace)
    build_method("instructrag", llm, max_tokens=17).run(trace)
    assert llm.ops == ["generate"] * 3


def test_keys_name_what_computed_them():
    trace = Trace(QUESTION, PASSAGES)
    build_method("vanilla+pre_answering", probe_llm("m1")).run(trace)
    heads = {k.split("|")[0] for k in trace.quantities}
    assert heads == {"generator:vanilla", "predictor:pre_answering"}
    assert all(k.split("|")[1] == "m1" for k in trace.quantities)
    other = Trace(QUESTION, PASSAGES[:1])  # other passages read: other keys
    build_method("vanilla+pre_answering", probe_llm("m1")).run(other)
    assert not set(trace.quantities) & set(other.quantities)


# ---------------------------------------------------------------------------------------- costs
METHODS = ["vanilla", "vanilla+llm_judge", "vanilla+k_precision", "vanilla+pre_answering", "dual_generation"]


def _costs(order):
    llm = MeteredLLM(probe_llm())
    trace = Trace(QUESTION, PASSAGES)
    methods = {n: build_method(n, llm) for n in order}
    table = {}
    for n in order:
        with trace.attribute() as used:
            methods[n].run(trace)
        table[n] = (used.cost.to_dict(), used.shared.to_dict(), used.spent.to_dict())
    return table, llm.inner.ops


def test_cost_of_a_method_does_not_depend_on_who_asked_first():
    forward, fwd_requests = _costs(METHODS)
    backward, bwd_requests = _costs(METHODS[::-1])
    for n in METHODS:
        assert forward[n][0] == backward[n][0], n
    gen = {"calls": 1, "prompt_tokens": 10, "completion_tokens": 3}
    assert {k: forward["vanilla"][0][k] for k in gen} == gen
    # the judge and k-precision methods carry the generation they used
    assert forward["vanilla+llm_judge"][0]["calls"] == 2
    assert forward["vanilla+llm_judge"][0]["prompt_tokens"] == 20
    assert forward["vanilla+k_precision"][0]["prompt_tokens"] == 10
    assert forward["dual_generation"][0]["calls"] == 3  # generation + two scores
    # ... and say it was shared: in forward order the generation was computed for `vanilla`
    assert forward["vanilla+k_precision"][1]["calls"] == 1
    assert forward["vanilla+k_precision"][2]["calls"] == 0
    assert forward["vanilla"][2]["calls"] == 1
    # what the run spent is the same in either order: every request once
    assert sorted(fwd_requests) == sorted(bwd_requests)
    assert sum(c[2]["calls"] for c in forward.values()) == len(fwd_requests) == 5


def test_metered_counts_every_request_kind_and_cache_hits(tmp_path):
    probe = probe_llm()
    llm = MeteredLLM(CachedLLM(probe, RequestCache(tmp_path / "c.sqlite")))
    for _ in range(2):
        with metering() as u:
            llm.generate("q")
            llm.next_token_logprobs("q", top_k=5)
            llm.score("q", "x")
        assert (u.calls, u.prompt_tokens, u.completion_tokens) == (3, 31, 3)
        assert u.requests == {"generate": 1, "next_token": 1, "score": 1}
    assert u.cache_hits == 3 and u.cached_prompt_tokens == 31  # the second round: all from the cache
    assert probe.ops == ["generate", "next_token", "score"]


def test_nested_scopes_count_each_request_once():
    llm = MeteredLLM(probe_llm())
    outer = Usage()
    with metering(outer):
        llm.generate("a")
        with metering() as inner:
            llm.generate("b")
    assert outer.calls == 1 and inner.calls == 1


# ------------------------------------------------------------------------------------- wrappers
@pytest.mark.parametrize(
    "wrapper",
    [lambda llm, tmp: CachedLLM(llm, RequestCache(tmp / "c.sqlite")), lambda llm, tmp: MeteredLLM(llm)],
    ids=["cached", "metered"],
)
def test_wrappers_forward_the_whole_interface(wrapper, tmp_path):
    probe = probe_llm()
    w = wrapper(probe, tmp_path)
    assert dropped_members(type(w)) == []
    for attr in ("backend", "model_id", "fingerprint", "capabilities", "context_window"):
        assert getattr(w, attr) == getattr(probe, attr)
    w.score("q", "x")
    w.next_token_logprobs("q")
    assert probe.ops == ["score", "next_token"]
    assert w.count_prompt_tokens("q") == 10
    assert w.attentions("q") == "attention maps"  # a backend's own capability passes through
    assert MeteredLLM(w).attentions("q") == "attention maps"


def dropped_members(cls) -> list[str]:
    """Interface members that `cls` takes from the LLM base class instead of forwarding. The base's
    `generate` only checks its options and hands them to `_generate`: a class that has its own
    `_generate` (a wrapper's forwards) keeps what it wraps."""
    own_hook = getattr(cls, "_generate", None) is not LLM._generate
    return [n for n in interface_members() if getattr(cls, n) is getattr(LLM, n) and not (n == "generate" and own_hook)]


def test_a_wrapper_that_drops_a_member_is_caught():
    class OldStyleWrapper(LLM):  # how the wrappers were written before: only generate forwarded
        def __init__(self, inner):
            self.inner = inner

        def generate(self, prompt, **kw):
            return self.inner.generate(prompt, **kw)

    assert {"score", "next_token_logprobs", "count_prompt_tokens"} <= set(dropped_members(OldStyleWrapper))
    assert issubclass(CachedLLM, LLMWrapper) and issubclass(MeteredLLM, LLMWrapper)


# ----------------------------------------------------------------------------- options (spec)
def test_method_spec_routes_options_and_rejects_unknown_ones():
    assert accepted_options("instructrag+pre_answering")["family"] == "generator"
    assert accepted_options("instructrag+pre_answering")["top_k"] == "predictor"
    with pytest.raises(InputError, match="takes no option 'famly'"):
        MethodSpec("instructrag", {"famly": "multi_hop"})
    with pytest.raises(InputError, match="unknown dataset family"):
        build_method("instructrag", probe_llm(), family="medieval")
    a = MethodSpec("instructrag", {"family": "multi_hop"})
    assert MethodSpec("vanilla").with_defaults({"family": "multi_hop", "max_tokens": 9}).options == {"max_tokens": 9}
    m = build_method(MethodSpec("instructrag", {"family": "multi_hop"}), probe_llm())
    assert m.generator.family == "multi_hop" and m.spec == a


def test_one_identity_names_options_with_defaults_prompts_and_the_model(monkeypatch):
    from verirag.awf.generators import vanilla
    from verirag.prompts import load_prompt

    base = build_method("instructrag", probe_llm())
    assert build_method("instructrag", probe_llm(), max_tokens=256).digest == base.digest  # the default, written out
    assert build_method("instructrag", probe_llm(), family="multi_hop").digest != base.digest
    assert build_method("instructrag", probe_llm(), max_tokens=64).digest != base.digest
    assert build_method("instructrag", probe_llm("other-weights")).digest != base.digest
    labelled = build_method(MethodSpec("instructrag", label="x"), probe_llm())
    assert labelled.digest == base.digest  # a label is no identity
    before = build_method("vanilla+nli", probe_llm())
    trace = Trace("q?", PASSAGES)
    key = before.generator.quantity_key(trace)
    edited = load_prompt("vanilla", "shared")
    monkeypatch.setattr(
        vanilla,
        "load_prompt",
        lambda *a, **k: type(edited)(
            edited.name, edited.user + " Be brief.", edited.system, edited.source, edited.extra
        ),
    )
    after = build_method("vanilla+nli", probe_llm())
    assert after.digest != before.digest and after.generator.quantity_key(trace) != key
    assert after.predictor.digest == before.predictor.digest  # only what reads the prompt changed


def test_judge_applies_only_to_methods_with_an_entailment_model():
    from verirag.awf.entailment.llm_judge import LLMJudgeEntailment

    judge = LLMJudgeEntailment(probe_llm("judge"))
    assert build_method("vanilla+nli", probe_llm(), entailment=judge).predictor.entailment is judge
    for name in ("vanilla+llm_judge", "intrinsic", "vanilla"):
        with pytest.raises(InputError, match="no entailment model"):
            build_method(name, probe_llm(), entailment=judge)


# ------------------------------------------------------------------------------------ pipeline
def _index():
    return Index.build(PASSAGES, kind="bm25")


def test_a_failing_endpoint_is_asked_once_per_question(fake):
    fake.add("/v1/chat/completions", 400, {"error": {"message": "prompt too long"}}, repeat=5)
    p = Pipeline(PipelineConfig(model=f"{fake.url}#fake-model", k=2), index=_index())
    with pytest.raises(BackendError, match="HTTP 400"):  # an outage, never a verdict
        p.ask(QUESTION)
    assert fake.count("/v1/chat/completions") == 1


def test_pipeline_judge_option_is_checked(monkeypatch):
    monkeypatch.setattr("verirag.awf.pipeline.load_llm", lambda spec, **kw: probe_llm(spec))
    p = Pipeline(PipelineConfig(model="m", method="intrinsic", judge="llm", k=2), index=_index())
    with pytest.raises(InputError, match="no entailment model"):
        p.ask(QUESTION)
    p = Pipeline(PipelineConfig(model="m", method="vanilla+llm_judge", k=2), index=_index())
    r = p.ask(QUESTION)
    assert r.usage["calls"] == 2 and r.usage["prompt_tokens"] == 20


# ------------------------------------------------------------------------------------- runner
@pytest.mark.slow
def test_warm_rerun_reports_the_same_costs_all_from_the_cache(tmp_path, smollm):
    from verirag_lab.experiments.grid.config import parse_config
    from verirag_lab.experiments.grid.runner import run_experiment

    data = tmp_path / "qa.jsonl"
    data.write_text(
        "\n".join(
            json.dumps(
                {"id": f"q{i}", "question": q, "references": [a], "passages": [{"id": "p", "text": PASSAGES[0].text}]}
            )
            for i, (q, a) in enumerate([(QUESTION, "25 minutes"), ("Where do puffins nest?", "cliffs")])
        )
        + "\n"
    )
    cache = RequestCache(tmp_path / "cache.sqlite")
    factory = lambda spec, n_ctx: CachedLLM(smollm, cache)  # noqa: E731
    cfg = parse_config(
        {
            "datasets": [{"name": "jsonl", "path": str(data)}],
            "models": ["smollm2-135m"],
            "methods": [
                "vanilla",
                "vanilla+llm_judge",
                "vanilla+pre_answering",
                {"name": "vanilla", "label": "vanilla-short", "max_tokens": 8},
            ],
            "generation": {"max_tokens": 24, "n_ctx": 2048},
        }
    )

    def records(out):
        run_experiment(cfg, out, llm_factory=factory, progress=False)
        return {json.loads(line)["key"]: json.loads(line) for line in (out / "results.jsonl").open()}

    cold, warm = records(tmp_path / "cold"), records(tmp_path / "warm")
    assert cold.keys() == warm.keys() and len(cold) == 8
    for key, rec in cold.items():
        w = warm[key]
        assert (rec["calls"], rec["prompt_tokens"], rec["completion_tokens"]) == (
            w["calls"],
            w["prompt_tokens"],
            w["completion_tokens"],
        ), key
        assert w["details"]["cache_hits"] == w["calls"] > 0
        assert rec["method_spec"]["options"]["max_tokens"] in (8, 24)
    judge = next(r for r in cold.values() if r["method"] == "vanilla+llm_judge")
    plain = next(r for r in cold.values() if r["method"] == "vanilla" and r["example_id"] == judge["example_id"])
    assert judge["calls"] == 2 and judge["prompt_tokens"] > plain["prompt_tokens"] > 0
    assert judge["details"]["shared"]["calls"] == 1 and judge["spent"]["calls"] == 1
    short = [k for k, r in cold.items() if r["method"] == "vanilla-short"]
    assert all(
        k.endswith(cold[k]["method_digest"]) and cold[k]["method_spec"]["resolved_options"]["max_tokens"] == 8
        for k in short
    )
    assert {cold[k]["method_digest"] for k in short}.isdisjoint(
        r["method_digest"] for r in cold.values() if r["method"] == "vanilla"
    )
