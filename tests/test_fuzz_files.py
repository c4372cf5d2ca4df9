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

from verirag.errors import InputError, VeriragError

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
    from verirag_lab.datasets.jsonl import load_jsonl

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
    from verirag_lab.experiments.grid.config import load_config

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


# --------------------------------------------------------------------------- files verirag wrote
# A file verirag wrote and reads back (an index, a learned part), cut short as a full disk or a
# killed copy leaves it, emptied, or replaced by another type or by garbage: loading it is an
# InputError naming that very file and the command that makes it again.
DEMO_CORPUS = SRC / "demo" / "corpus"
SHIPPED_VERIFIER = SRC / "learned" / "shipped" / "verifier"
CUTS = (0, 1, 0.25, 0.5, -2)  # bytes kept: none, one, a quarter, half, all but the last two


def damaged(original: Path, folder: Path, name: str, how) -> Path:
    """A copy of `original` (a file or a folder) in `folder` whose file `name` is damaged `how`:
    a cut (see CUTS) or the bytes to write instead."""
    import shutil

    copy = folder / original.name
    if original.is_dir():
        shutil.copytree(original, copy)
    else:
        shutil.copy(original, copy)
    target = copy / name if original.is_dir() else copy
    if isinstance(how, bytes):
        target.write_bytes(how)
    else:
        data = target.read_bytes()
        keep = (
            how
            if isinstance(how, int) and how >= 0
            else len(data) + how
            if isinstance(how, int)
            else int(len(data) * how)
        )
        target.write_bytes(data[:keep])
    return target


@pytest.fixture(scope="module")
def built_index(tmp_path_factory) -> Path:
    """A hybrid index of the demo corpus, built and saved as `verirag index` does (bag-of-words
    vectors stand in for MiniLM: the files are the same, the test needs no model)."""
    from test_retrieval_hybrid import BagOfWordsEmbedder

    from verirag.retrieval import Index, load_corpus

    folder = tmp_path_factory.mktemp("index") / "ix"
    Index.build(load_corpus(DEMO_CORPUS).passages, kind="hybrid", embedder=BagOfWordsEmbedder()).save(folder)
    return folder


def index_files(folder: Path) -> list[str]:
    return sorted(p.relative_to(folder).as_posix() for p in folder.rglob("*") if p.is_file())


def test_the_built_index_has_the_files_the_test_damages(built_index):
    assert index_files(built_index) == [
        "bm25/bm25.json",
        "bm25/data.csc.index.npy",
        "bm25/indices.csc.index.npy",
        "bm25/indptr.csc.index.npy",
        "bm25/params.index.json",
        "bm25/vocab.index.json",
        "dense/dense.json",
        "dense/embeddings.npy",
        "meta.json",
        "passages.jsonl",
    ]


def _index_load_names(built_index, tmp_path, name, how) -> None:
    from test_retrieval_hybrid import BagOfWordsEmbedder

    from verirag.retrieval import Index

    target = damaged(built_index, tmp_path, name, how)
    with pytest.raises(InputError) as err:
        Index.load(target.parent if name.count("/") == 0 else target.parents[1], embedder=BagOfWordsEmbedder())
    message = str(err.value)
    assert str(target) in message, message
    assert f"verirag index CORPUS --out {tmp_path / built_index.name}" in message, message


@pytest.mark.parametrize("cut", CUTS)
def test_a_truncated_index_file_is_an_input_error_naming_it(built_index, tmp_path, cut):
    for i, name in enumerate(index_files(built_index)):
        _index_load_names(built_index, tmp_path / str(i), name, cut)


@pytest.mark.parametrize(
    "content",
    [b"\x93NUMPY\x01\x00garbage", b"\xff\xfe\x00garbage", b"[1, 2, 3]\n", b'"text"\n', b"null"],
    ids=["npy-header", "binary", "json-list", "json-string", "json-null"],
)
def test_an_index_file_of_garbage_or_another_type_is_an_input_error_naming_it(built_index, tmp_path, content):
    for i, name in enumerate(index_files(built_index)):
        _index_load_names(built_index, tmp_path / str(i), name, content)


def test_index_arrays_of_the_wrong_shape_or_type_are_input_errors_naming_them(built_index, tmp_path):
    import numpy as np

    wrong = {
        "dense/embeddings.npy": [np.arange(7), np.zeros((3, 64), np.float32), np.zeros((8, 5), np.float32)],
        "bm25/data.csc.index.npy": [np.zeros(3, np.float32)],
        "bm25/indices.csc.index.npy": [np.zeros(2, np.int32)],
        "bm25/indptr.csc.index.npy": [np.arange(3)],
    }
    for i, (name, arrays) in enumerate(wrong.items()):
        for j, a in enumerate(arrays):
            import io

            buf = io.BytesIO()
            np.save(buf, a)
            _index_load_names(built_index, tmp_path / f"{i}-{j}", name, buf.getvalue())


@pytest.mark.parametrize("cut", CUTS)
@pytest.mark.parametrize("name", ["verifier.json", "adapter.safetensors"])
def test_a_truncated_learned_part_is_an_input_error_naming_it(tmp_path, name, cut):
    """The shipped verifier (JSON + safetensors), cut short: refused before any model loads."""
    from verirag.learned.verifier import TrainedVerifier

    target = damaged(SHIPPED_VERIFIER, tmp_path, name, cut)
    with pytest.raises(InputError) as err:
        TrainedVerifier.load(target.parent)
    assert str(target) in str(err.value) and TrainedVerifier.fit_command in str(err.value), str(err.value)


@pytest.mark.parametrize("cut", CUTS)
def test_a_truncated_threshold_file_is_an_input_error_naming_it(tmp_path, cut):
    from verirag.learned.threshold import ThresholdController, parse_threshold

    saved = tmp_path / "saved" / "threshold.json"
    ThresholdController(precision=0.8, delta=0.1).fit(
        [i / 40 for i in range(40)], [int(i > 12) for i in range(40)]
    ).save(saved)
    (tmp_path / "cut").mkdir()
    target = damaged(saved, tmp_path / "cut", "", cut)
    with pytest.raises(InputError) as err:
        parse_threshold(str(target))
    assert str(target) in str(err.value) and ThresholdController.fit_command in str(err.value), str(err.value)


@pytest.mark.parametrize("cut", CUTS[1:])
def test_a_damaged_request_cache_is_an_input_error_naming_it(tmp_path, cut):
    """Garbage is refused, naming the file; a cut file is refused the same way, or SQLite reads what
    is intact of it (a cut inside the first page is a new empty database; a page's unused tail is
    never read) and what it gives back is the entry itself or nothing: never another exception."""
    from verirag.llm.cache import RequestCache

    saved = tmp_path / "saved" / "requests.sqlite"
    cache = RequestCache(saved)
    for i in range(200):
        cache.put(f"k{i}", {"text": "a" * 50})
    cache.close()  # the write-ahead log folded into the file
    (tmp_path / "cut").mkdir()
    target = damaged(saved, tmp_path / "cut", "", cut)
    garbage = tmp_path / "garbage.sqlite"
    garbage.write_bytes(b"garbage" * 200)
    for path in (target, garbage):
        try:
            got = RequestCache(path).get("k150")
        except InputError as e:
            assert str(path) in str(e) and "delete it" in str(e), str(e)
        else:
            assert path == target and got in (None, {"text": "a" * 50})


def test_a_request_cache_entry_that_does_not_read_back_is_made_again(tmp_path):
    from doubles import ScriptedLLM

    from verirag.llm.cache import RequestCache
    from verirag.llm.cached import CachedLLM

    cache = RequestCache(tmp_path / "requests.sqlite")
    llm = CachedLLM(ScriptedLLM(), cache)
    first = llm.generate("q")
    for bad in ("{torn", '["a list"]', '{"text": 1, "tokens": 5}'):
        cache._conn().execute("UPDATE requests SET value=?", (bad,))
        with pytest.warns(UserWarning, match="does not read back"):
            again = llm.generate("q")
        assert again.text == first.text and not again.cached
    assert llm.generate("q").cached  # made again and stored over the bad entry
