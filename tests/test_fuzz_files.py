"""Malformed files given to the loaders and the CLI: each either loads or raises a VeriragError
that says what is wrong (the CLI prints it and exits non-zero); never another exception, never a
traceback. Also: nothing of verirag unpickles or evaluates data."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from verirag.errors import VeriragError

SRC = Path(__file__).resolve().parents[1] / "src" / "verirag"
FILES = settings(
    max_examples=300,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False) | st.text(max_size=30),
    lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=12), kids, max_size=4),
    max_leaves=15,
)
example_like = st.fixed_dictionaries(
    {},
    optional={
        "id": json_values,
        "question": json_values,
        "references": json_values,
        "answerable": json_values,
        "relevance": json_values,
        "history": json_values,
        "passages": st.lists(
            st.fixed_dictionaries({}, optional={"id": json_values, "text": json_values, "title": json_values}),
            max_size=3,
        )
        | json_values,
    },
)
file_bytes = st.one_of(
    st.binary(max_size=400),  # anything, invalid UTF-8 included
    st.lists(json_values.map(json.dumps), max_size=5).map(lambda ls: "\n".join(ls).encode()),
    st.lists(example_like.map(json.dumps), max_size=5).map(lambda ls: "\n".join(ls).encode()),
    st.text(max_size=300).map(lambda t: t.encode("utf-8", "surrogatepass")),
)


def loads_or_says_why(fn, *args) -> None:
    try:
        fn(*args)
    except VeriragError as e:
        assert str(e).strip()


@FILES
@given(data=file_bytes)
def test_dataset_jsonl_loader(tmp_path, data):
    from verirag.datasets.jsonl import load_jsonl

    p = tmp_path / "data.jsonl"
    p.write_bytes(data)
    loads_or_says_why(load_jsonl, p)


@FILES
@given(data=file_bytes, suffix=st.sampled_from([".jsonl", ".txt", ".md"]))
def test_corpus_loader(tmp_path, data, suffix):
    from verirag.retrieval import load_corpus

    p = tmp_path / f"corpus{suffix}"
    p.write_bytes(data)
    loads_or_says_why(load_corpus, p)


@FILES
@given(
    data=st.one_of(
        st.binary(max_size=300),
        json_values.map(lambda v: json.dumps(v).encode()),
        st.dictionaries(
            st.sampled_from(
                ["name", "datasets", "models", "methods", "threshold", "generation", "applications", "bootstrap"]
            ),
            json_values,
            max_size=6,
        ).map(lambda d: json.dumps(d).encode()),
    )
)
def test_experiment_config_loader(tmp_path, data):
    from verirag.experiments.grid.config import load_config

    p = tmp_path / "config.yaml"
    p.write_bytes(data)
    loads_or_says_why(load_config, p)


@FILES
@given(data=st.one_of(st.binary(max_size=300), json_values.map(lambda v: json.dumps(v).encode())))
def test_threshold_file_loader(tmp_path, data):
    from verirag.learned.threshold import parse_threshold

    p = tmp_path / "threshold.json"
    p.write_bytes(data)
    loads_or_says_why(parse_threshold, str(p))


@pytest.mark.parametrize(
    "argv",
    [
        ["ask", "q", "--corpus", "{file}", "--preset", "tiny"],
        ["eval", "{file}", "--out", "{dir}/run"],
        ["ask", "q", "--corpus", "{dir}/corpus.md", "--threshold", "{file}", "--preset", "tiny"],
        ["report", "{dir}"],
        ["calibrate", "{dir}", "--model", "smollm2-135m", "--method", "vanilla", "--precision", "0.9"],
        ["ask", "q", "--index", "{dir}", "--preset", "tiny"],
    ],
)
@pytest.mark.parametrize("content", [b"\xff\xfe\x00garbage", b"{not: [valid", b'{"id": 1}\n[1, 2]\n', b""])
def test_the_cli_turns_malformed_files_into_one_line_errors(tmp_path, capsys, argv, content):
    from verirag.cli import main

    (tmp_path / "corpus.md").write_text("The bridge is green.")
    f = tmp_path / "bad.jsonl"
    f.write_bytes(content)
    (tmp_path / "results.jsonl").write_bytes(content)  # a run directory whose records are malformed
    args = [a.format(file=f, dir=tmp_path) for a in argv]
    code = main(args)
    captured = capsys.readouterr()
    assert code != 0 and "Traceback" not in captured.out + captured.err, args
    assert captured.err.strip()


def test_nothing_unpickles_or_evaluates_data():
    """No pickle, no eval/exec, no unsafe YAML, no torch.load without weights_only, anywhere."""
    banned = [
        r"\bimport pickle\b",
        r"\bpickle\.loads?\(",
        r"(?<![\w.])eval\(",
        r"(?<![\w.])exec\(",
        r"yaml\.load\(",
        r"yaml\.unsafe_load",
        r"torch\.load\((?![^)]*weights_only=True)",
        r"allow_pickle=True",
        r"\bmarshal\.loads\(",
        r"\bshelve\b",
    ]
    hits = []
    for path in SRC.rglob("*.py"):
        for n, line in enumerate(path.read_text().splitlines(), 1):
            code = line.split("#", 1)[0]
            hits += [f"{path.relative_to(SRC)}:{n}: {line.strip()}" for pat in banned if re.search(pat, code)]
    assert hits == []
