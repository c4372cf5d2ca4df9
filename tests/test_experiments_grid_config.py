"""Experiment configs: one schema, every malformed file a clear InputError naming its field;
methods as MethodSpec (name + options + label), dataset defaults, complete options."""

from __future__ import annotations

import copy
import json
import tempfile
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verirag.awf.spec import MethodSpec
from verirag.errors import InputError, VeriragError
from verirag_lab.experiments.grid.config import ExperimentConfig, load_config, parse_config

VALID = {
    "name": "t",
    "datasets": [
        {"name": "nq", "n": 3, "seed": 0, "options": {"k": 5}},
        {"name": "hotpotqa", "n": 2, "method_options": {"family": "multi_hop"}},
    ],
    "models": ["smollm2-135m", "qwen2.5-0.5b"],
    "methods": ["vanilla", "vanilla+nli", {"name": "instructrag", "max_tokens": 200}, "cot_hybrid", "intrinsic"],
    "generation": {"max_tokens": 64, "n_ctx": 2048},
    "ground_truth": {"match": "recall_or_substring"},
    "threshold": {"value": 0.5},
    "applications": {
        "no_rag_fallback": {"models": ["smollm2-135m"], "folds": 3},
        "escalate": {"small": "smollm2-135m", "large": "qwen2.5-0.5b", "large_method": "vanilla", "rate": 0.2},
    },
    "bootstrap": {"n_resamples": 100, "confidence": 0.9, "seed": 1},
    "concurrency": 2,
}


def cfg(**over) -> ExperimentConfig:
    raw = copy.deepcopy(VALID)
    raw.update(over)
    return parse_config(raw)


def problems(**over) -> str:
    with pytest.raises(InputError) as e:
        cfg(**over)
    return str(e.value)


def write(tmp_path: Path, data: bytes | str, name: str = "c.yaml") -> Path:
    p = tmp_path / name
    p.write_bytes(data if isinstance(data, bytes) else data.encode())
    return p


# --------------------------------------------------------------------------- reading the file
def test_the_valid_config_loads(tmp_path):
    c = load_config(write(tmp_path, yaml.safe_dump(VALID)))
    assert c.name == "t" and [d.name for d in c.datasets] == ["nq", "hotpotqa"]
    assert c.max_tokens == 64 and c.n_ctx == 2048 and c.concurrency == 2
    assert c.bootstrap == {"n_resamples": 100, "confidence": 0.9, "seed": 1}
    assert all(isinstance(m, MethodSpec) for m in c.methods)
    json.dumps(c.run_json())


@pytest.mark.parametrize("data", [b"name: caf\xe9\n", b"\xff\xfe\x00n\x00a", b"models: [m]\n\x80\x81"])
def test_bytes_that_are_not_utf8_are_an_input_error(tmp_path, data):
    with pytest.raises(InputError, match="not UTF-8"):
        load_config(write(tmp_path, data))


def test_a_utf8_byte_order_mark_is_fine(tmp_path):
    assert load_config(write(tmp_path, b"\xef\xbb\xbf" + yaml.safe_dump(VALID).encode())).name == "t"


@pytest.mark.parametrize(
    "text, says",
    [
        ("", "is empty"),
        ("# only a comment\n", "is empty"),
        ("- a\n- b\n", "top level must be a mapping"),
        ("just text", "top level must be a mapping"),
        ("models: [a\n", "not valid YAML"),
        ("a: 1\na: [\n", "not valid YAML"),
        ("d: 2024-13-45\n", "not valid YAML"),
        ("\tmodels: x", "not valid YAML"),
    ],
)
def test_unreadable_files_are_input_errors(tmp_path, text, says):
    with pytest.raises(InputError, match=says):
        load_config(write(tmp_path, text))


def test_a_missing_file_and_a_directory_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="not found"):
        load_config(tmp_path / "nope.yaml")
    with pytest.raises(InputError, match="directory"):
        load_config(tmp_path)


# --------------------------------------------------------------------------- fields
@pytest.mark.parametrize("confidence", ["0.95-", None, 1.5, 0, 1, True, [0.9], float("nan")])
def test_bootstrap_confidence_must_be_a_number_in_the_open_unit_interval(confidence):
    msg = problems(bootstrap={"n_resamples": 100, "confidence": confidence})
    assert "bootstrap.confidence: must be a number in (0, 1)" in msg


def test_bootstrap_confidence_from_a_file(tmp_path):
    text = yaml.safe_dump(VALID).replace("confidence: 0.9", "confidence: 0.95-")
    with pytest.raises(InputError, match=r"bootstrap\.confidence: must be a number in \(0, 1\), got text '0\.95-'"):
        load_config(write(tmp_path, text))


def test_every_problem_is_listed_with_its_place():
    msg = problems(
        datasets=[{"name": "nope", "n": 0}, {"name": "nq", "seed": -1, "colour": 1}],
        models=["m", "m"],
        threshold={"precision": 1.5},
        generation={"max_tokens": "many"},
        ground_truth={"match": "llm"},
        bootstrap=[],
        concurrency=0,
        colour="red",
        applications={"escalate": {"small": "other", "large": "big", "rate": 2}},
    )
    for part in (
        "datasets[0].name: unknown dataset 'nope'",
        "datasets[0].n: must be an integer >= 1, got 0",
        "datasets[1].seed",
        "datasets[1].colour: unknown key",
        "models[1]: 'm' appears twice",
        "threshold.precision",
        "generation.max_tokens",
        "ground_truth.llm",
        "bootstrap: must be a mapping",
        "concurrency: must be an integer >= 1",
        "colour: unknown key",
        "applications.escalate.small: 'other' is not one of `models`",
        "applications.escalate.rate",
    ):
        assert part in msg, (part, msg)
    assert msg.startswith("config: 13 problem(s): ")


@pytest.mark.parametrize(
    "over, place",
    [
        ({"models": []}, "models: must be a non-empty list"),
        ({"methods": None}, "methods: must be a non-empty list"),
        ({"datasets": 3}, "datasets: must be a non-empty list"),
        ({"datasets": [{"n": 3}]}, "datasets[0].name: is required"),
        ({"datasets": ["nq", "nq"]}, "datasets[1].name: dataset 'nq' appears twice"),
        (
            {"datasets": [{"name": "nq", "options": {"retreiver": "bm25"}}]},
            "datasets[0].options.retreiver: dataset 'nq' takes no option",
        ),
        ({"datasets": [{"name": "nq", "options": [1]}]}, "datasets[0].options: must be a mapping"),
        (
            {"threshold": {"value": 0.5, "action_rate": 0.2}},
            "threshold: give exactly one of value, precision, action_rate",
        ),
        (
            {"threshold": {"precision": 0.9, "method": "holm"}},
            "threshold.method: must be one of bonferroni, fixed_sequence",
        ),
        ({"threshold": "high"}, "threshold: must be a mapping"),
        ({"ground_truth": {"match": "fuzzy"}}, "ground_truth.match: must be one of"),
        (
            {"applications": {"no_rag_fallback": {"models": ["gpt"]}}},
            "applications.no_rag_fallback.models[0]: 'gpt' is not one of `models`",
        ),
        (
            {"applications": {"no_rag_fallback": {"folds": 1}}},
            "applications.no_rag_fallback.folds: must be an integer >= 2",
        ),
        ({"applications": {"escalate": {"small": "smollm2-135m"}}}, "applications.escalate.large: is required"),
        (
            {"applications": {"escalate": {"large": "q", "large_method": "vanila"}}},
            "applications.escalate.large_method: unknown method 'vanila'",
        ),
        ({"applications": {"retry": {}}}, "applications.retry: unknown key"),
        ({"name": ["a"]}, "name: must be text"),
        ({"judge_model": 3}, "judge_model: must be non-empty text"),
    ],
)
def test_each_mistake_names_its_field(over, place):
    assert place in problems(**over)


def test_null_means_the_default_where_there_is_one():
    c = cfg(
        generation=None,
        threshold=None,
        bootstrap={"confidence": 0.9, "seed": None},
        concurrency=None,
        datasets=[{"name": "nq", "n": None, "seed": None, "options": None}],
        applications=None,
    )
    # no generation length: each method answers at its own (InstructRAG's rationale needs 256 tokens)
    assert (c.max_tokens, c.n_ctx, c.threshold, c.concurrency) == (None, 4096, {"value": 0.5}, 1)
    assert "max_tokens" not in c.method_defaults()
    assert c.bootstrap == {"n_resamples": 1000, "confidence": 0.9, "seed": 0}
    assert c.datasets[0].n is None and c.datasets[0].seed == 0 and c.applications == {}


def test_a_bare_number_threshold_is_a_value():
    assert cfg(threshold=0.3).threshold == {"value": 0.3}
    assert cfg(threshold={"precision": 0.9, "delta": 0.05}).threshold == {"precision": 0.9, "delta": 0.05}


# --------------------------------------------------------------------------- methods as MethodSpec
def test_methods_are_specs_with_labels():
    c = cfg(methods=["vanilla", {"name": "instructrag", "label": "instructrag-mh", "family": "multi_hop"}])
    assert c.methods == [MethodSpec("vanilla"), MethodSpec("instructrag", {"family": "multi_hop"}, "instructrag-mh")]
    assert [m.label for m in c.methods] == ["vanilla", "instructrag-mh"]


def test_an_unknown_method_option_names_its_field():
    msg = problems(methods=["vanilla", "vanilla+nli", {"name": "instructrag", "famly": "multi_hop"}])
    assert "methods[2].famly: method 'instructrag' takes no option 'famly' (it takes: family, layout, max_tokens" in msg


def test_an_option_value_of_the_wrong_type_names_its_field():
    msg = problems(methods=[{"name": "vanilla", "max_tokens": "lots"}, {"name": "intrinsic", "broad_abstention": 1}])
    assert (
        "methods[0].max_tokens: must be an integer" in msg
        and "methods[1].broad_abstention: must be true or false" in msg
    )


@pytest.mark.parametrize(
    "entry, place",
    [
        ("vanila", "methods[0]: unknown method 'vanila'"),
        ("vanilla+nope", "methods[0]: unknown predictor 'nope'"),
        ({"label": "x"}, "methods[0].name: is required"),
        ({"name": 3}, "methods[0].name: must be a method name"),
        ({"name": "vanilla", "label": ""}, "methods[0].label: must be non-empty text"),
        (7, "methods[0]: must be a method name or a mapping"),
        ({"name": "vanilla", "max_tokens": float("inf")}, "methods[0].max_tokens"),
        ("", "methods[0]: must be a method name"),
    ],
)
def test_malformed_method_entries(entry, place):
    assert place in problems(methods=[entry])


def test_labels_must_be_unique():
    msg = problems(methods=["instructrag", {"name": "instructrag", "family": "multi_hop"}, "vanilla", "vanilla"])
    assert (
        "methods[1].label: label 'instructrag' twice (also methods[0]): entries of one method with different "
        "options need distinct labels" in msg
    )
    assert "methods[3]: the same method twice (also methods[2])" in msg
    c = cfg(methods=["instructrag", {"name": "instructrag", "label": "ir-mh", "family": "multi_hop"}])
    assert [m.label for m in c.methods] == ["instructrag", "ir-mh"]


def test_dataset_method_options_apply_where_accepted():
    c = cfg()
    by_label = {s.label: s for s in c.method_specs("hotpotqa")}
    assert by_label["instructrag"].options == {"family": "multi_hop", "max_tokens": 200}  # its own max_tokens wins
    assert by_label["cot_hybrid"].options == {"family": "multi_hop", "max_tokens": 64}  # generation max_tokens
    assert by_label["vanilla"].options == {"max_tokens": 64}  # takes no family
    assert by_label["vanilla+nli"].options == {"max_tokens": 64}
    assert by_label["intrinsic"].options == {"max_tokens": 64}
    nq = {s.label: s for s in c.method_specs("nq")}
    assert nq["instructrag"].options == {"max_tokens": 200} and nq["cot_hybrid"].options == {"max_tokens": 64}
    assert [s.label for s in c.method_specs("nq")] == [s.label for s in c.methods]
    assert c.datasets[1].method_options == {"family": "multi_hop"}
    with pytest.raises(InputError, match="not in config"):
        c.method_specs("squad2")


def test_an_entry_option_beats_the_dataset_default_which_beats_generation():
    c = cfg(
        methods=[{"name": "cot_hybrid", "family": "open_domain"}, "vanilla"],
        datasets=[{"name": "hotpotqa", "method_options": {"family": "multi_hop", "max_tokens": 99}}],
    )
    specs = {s.label: s for s in c.method_specs("hotpotqa")}
    assert specs["cot_hybrid"].options == {"family": "open_domain", "max_tokens": 99}
    assert specs["vanilla"].options == {"max_tokens": 99}


def test_a_dataset_default_no_method_takes_is_an_error():
    msg = problems(methods=["vanilla", "intrinsic"])  # hotpotqa sets family; neither takes it
    assert "datasets[1].method_options.family: no method in `methods` takes option 'family'" in msg
    msg = problems(datasets=[{"name": "nq", "method_options": {"max_tokens": "x"}}])
    assert "datasets[0].method_options.max_tokens: must be an integer" in msg


def test_digests_differ_with_options():
    # a record's identity is its built method's digest: the options with their defaults (a
    # dataset's method_options and the generation length included), the prompts, the model
    from doubles import NoCallLLM

    from verirag.awf.compose import build_method

    digest = lambda spec: build_method(spec, NoCallLLM()).digest  # noqa: E731
    a, b = MethodSpec("instructrag"), MethodSpec("instructrag", {"family": "multi_hop"})
    assert digest(a) != digest(b)
    assert digest(b) == digest(MethodSpec("instructrag", {"family": "multi_hop"}, "other-label"))
    c = cfg()
    hp = {s.label: digest(s) for s in c.method_specs("hotpotqa")}
    nq = {s.label: digest(s) for s in c.method_specs("nq")}
    assert hp["instructrag"] != nq["instructrag"] and hp["vanilla"] == nq["vanilla"]
    assert digest(cfg(generation={"max_tokens": 65}).method_specs("nq")[0]) != nq["vanilla"]


def test_runs_add_the_application_methods_as_specs():
    c = cfg()
    runs = dict(c.runs())
    assert [s.label for s in runs["smollm2-135m"]] == [
        "vanilla",
        "vanilla+nli",
        "instructrag",
        "cot_hybrid",
        "intrinsic",
        "no_context",
    ]
    assert runs["smollm2-135m"][-1] == MethodSpec("no_context")  # as configured: no defaults yet
    nq = dict(c.runs("nq"))
    assert nq["smollm2-135m"][-1] == MethodSpec("no_context", {"max_tokens": 64})
    assert nq["smollm2-135m"][:5] == c.method_specs("nq")
    assert [s.label for s in runs["qwen2.5-0.5b"]] == [s.label for s in c.methods]  # vanilla is already there
    hp = dict(c.runs("hotpotqa"))
    assert {s.label: s for s in hp["smollm2-135m"]}["cot_hybrid"].options["family"] == "multi_hop"
    c2 = cfg(models=["smollm2-135m"])
    assert [s.label for s in dict(c2.runs())["qwen2.5-0.5b"]] == ["vanilla"]
    assert c.applications["no_rag_fallback"]["fallback_method"] == "no_context"
    assert c.applications["escalate"]["large_method"] == "vanilla"


def test_an_application_method_may_name_a_configured_label_or_be_a_mapping():
    c = cfg(
        methods=["vanilla", {"name": "instructrag", "label": "ir-mh", "family": "multi_hop"}],
        datasets=["nq"],
        applications={
            "escalate": {"large": "qwen2.5-0.5b", "large_method": "ir-mh"},
            "no_rag_fallback": {"fallback_method": {"name": "no_context", "max_tokens": 32}},
        },
    )
    assert c.application_methods["escalate"] == MethodSpec("instructrag", {"family": "multi_hop"}, "ir-mh")
    assert c.applications["escalate"]["large_method"] == "ir-mh"
    assert dict(c.runs())["smollm2-135m"][-1] == MethodSpec("no_context", {"max_tokens": 32})
    msg = problems(
        methods=["vanilla"],
        datasets=["nq"],
        applications={"escalate": {"large": "q", "large_method": {"name": "vanilla", "max_tokens": 9}}},
    )
    assert "applications.escalate.large_method.label: label 'vanilla' is already used" in msg


def test_run_json_writes_methods_as_dicts():
    info = cfg().run_json()
    json.dumps(info)
    assert info["methods"][2] == {"name": "instructrag", "label": "instructrag", "options": {"max_tokens": 200}}
    assert info["methods"][0] == {"name": "vanilla", "label": "vanilla", "options": {}}  # as configured
    assert info["max_tokens"] == 64
    assert info["datasets"][1]["method_options"] == {"family": "multi_hop"}
    assert info["applications"]["no_rag_fallback"]["fallback_method"] == "no_context"


def test_the_shipped_awf_small_uses_the_multi_hop_demonstrations_on_hotpotqa():
    c = load_config(Path(__file__).resolve().parents[1] / "configs" / "awf-small.yaml")
    hp = {s.label: s.options for s in c.method_specs("hotpotqa")}
    nq = {s.label: s.options for s in c.method_specs("nq")}
    assert hp["instructrag"]["family"] == hp["cot_hybrid"]["family"] == "multi_hop"
    assert "family" not in nq["instructrag"] and "family" not in hp["vanilla"]


# --------------------------------------------------------------------------- property: nothing but VeriragError
BASE_TEXT = yaml.safe_dump(VALID, sort_keys=False)

yaml_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(10**6), 10**6)
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=12)
    | st.sampled_from(["vanilla", "nq", "hotpotqa", "0.95-", "multi_hop", "llm", "smollm2-135m"]),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)


def _paths(x, prefix=()):
    yield prefix
    if isinstance(x, dict):
        for k, v in x.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from _paths(v, prefix + (i,))


def _parent(root, path):
    for p in path[:-1]:
        root = root[p]
    return root


@st.composite
def mutated_configs(draw) -> bytes:
    raw = copy.deepcopy(VALID)
    for _ in range(draw(st.integers(1, 3))):
        paths = [p for p in _paths(raw) if p]
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent, key = _parent(raw, path), path[-1]
        op = draw(st.sampled_from(["delete", "replace", "insert"]))
        if op == "delete":
            del parent[key]
        elif op == "replace":
            parent[key] = draw(yaml_values)
        else:
            target = parent[key]
            if isinstance(target, dict):
                target[draw(st.text(max_size=8) | st.sampled_from(["name", "label", "family", "famly", "n"]))] = draw(
                    yaml_values
                )
            elif isinstance(target, list):
                target.insert(draw(st.integers(0, len(target))), draw(yaml_values))
            else:
                parent[key] = draw(yaml_values)
    data = yaml.safe_dump(raw, sort_keys=False, allow_unicode=True).encode()
    how = draw(st.sampled_from(["as is", "as is", "truncate", "bytes", "overwrite"]))
    if how == "truncate":
        data = data[: draw(st.integers(0, len(data)))]
    elif how == "bytes":
        at = draw(st.integers(0, len(data)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=6)) + data[at:]
    elif how == "overwrite":
        at = draw(st.integers(0, max(0, len(data) - 1)))
        data = data[:at] + draw(st.binary(min_size=1, max_size=4)) + data[at + 4 :]
    return data


_DIR = tempfile.TemporaryDirectory(prefix="verirag-config-")


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_configs())
def test_mutated_configs_give_a_config_or_a_verirag_error(data):
    p = Path(_DIR.name) / "mutated.yaml"
    p.write_bytes(data)
    try:
        c = load_config(p)
    except VeriragError as e:
        assert str(e)
        return
    assert isinstance(c, ExperimentConfig)
    json.dumps(c.run_json())
    for d in c.datasets:
        assert all(isinstance(s, MethodSpec) for _, specs in c.runs(d.name) for s in specs)
        c.method_specs(d.name)
