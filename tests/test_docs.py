"""The README and the documentation site stay true: every python and bash snippet runs (or says why it
cannot), and `mkdocs build --strict` fails on a link to a heading that is no longer there.

The marker convention is docs/contributing-docs.md's: an HTML comment just above a block,
`<!-- snippet: not-run REASON -->`, `<!-- snippet: tested-by tests/FILE.py::TEST -->`,
`<!-- snippet: needs model shared_data -->`, or none (this file runs the block)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from readme import REPO, RUN_LANGUAGES, Snippet, snippets

BIN = Path(sys.executable).parent
RUN = [s for s in snippets() if s.language in RUN_LANGUAGES]
NEEDS = {"model": "smollm_path", "shared_data": "shared_data_dir"}

LOG = [
    {
        "user_input": "Who designed Halvorsen Lighthouse?",
        "response": "Maren Solberg designed it.",
        "retrieved_contexts": [
            "Halvorsen Lighthouse was built in 1887 to a design by the engineer Maren Solberg.",
            "Puffins nest in April.",
        ],
    },
    {
        "user_input": "When was the light automated?",
        "response": "In 1962.",
        "retrieved_contexts": ["The keeper's cottage is now a museum."],
    },
]


def test_there_are_snippets_and_every_language_is_known():
    assert len(RUN) > 20
    assert {s.language for s in snippets()} <= {"python", "bash", "yaml", "nginx", "text", "json"}


def test_the_readme_is_short():
    assert len((REPO / "README.md").read_text("utf-8").splitlines()) <= 200


def test_the_readmes_links_into_the_docs_lead_somewhere():
    """The README is not part of the site (mkdocs does not check it): its relative links are checked here."""
    links = re.findall(r"\]\(((?:docs/)[^)#]+)(?:#[^)]*)?\)", (REPO / "README.md").read_text("utf-8"))
    assert len(links) > 10
    assert [link for link in links if not (REPO / link).is_file()] == []


@pytest.mark.parametrize("snippet", [s for s in RUN if s.marker is None], ids=lambda s: s.where)
def test_an_unmarked_snippet_runs(snippet, sandbox):
    run(snippet, sandbox)


@pytest.mark.slow
@pytest.mark.parametrize("snippet", [s for s in RUN if (s.marker or "").startswith("needs")], ids=lambda s: s.where)
def test_a_snippet_that_needs_a_model_or_data_runs(snippet, sandbox, request):
    needs = snippet.marker.split()[1:]
    assert needs and set(needs) <= set(NEEDS), f"{snippet.where}: needs one of {sorted(NEEDS)}, got {needs}"
    for need in needs:
        request.getfixturevalue(NEEDS[need])  # skips where the model or the data is absent
    run(snippet, sandbox)


@pytest.mark.parametrize("snippet", [s for s in RUN if s.marker], ids=lambda s: s.where)
def test_a_marker_says_who_runs_the_snippet_or_why_none_does(snippet):
    kind, _, rest = snippet.marker.partition(" ")
    assert kind in ("not-run", "tested-by", "needs"), f"{snippet.where}: unknown marker {snippet.marker!r}"
    if kind == "not-run":
        assert len(rest.split()) >= 3, f"{snippet.where}: a not-run snippet says why in a few words"
    if kind == "tested-by":
        path, _, name = rest.partition("::")
        test_file = REPO / path
        assert test_file.is_file(), f"{snippet.where}: no {path}"
        assert re.search(rf"^def {re.escape(name)}\(", test_file.read_text("utf-8"), re.M), f"no {rest}"


# ---- running a snippet -----------------------------------------------------------------------------
@pytest.fixture
def sandbox(tmp_path) -> Path:
    """The folder a snippet runs in (docs/contributing-docs.md lists what it holds)."""
    from verirag.demo import corpus_path

    shutil.copytree(corpus_path(), tmp_path / "my-docs")
    (tmp_path / "answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in LOG))
    mine = [{"query": r["user_input"], "output": r["response"], "docs": r["retrieved_contexts"], "human_ok": ok}
            for r, ok in zip(LOG, (True, False))]  # fmt: skip
    (tmp_path / "mine.jsonl").write_text("".join(json.dumps(r) + "\n" for r in mine))
    (tmp_path / "retrieved").mkdir()
    (tmp_path / "retrieved" / "1.txt").write_text("The Skerry Bridge is maintained by the county council.")
    (tmp_path / "retrieved" / "2.txt").write_text("The bridge was painted green in 1990.")
    (tmp_path / "configs").symlink_to(REPO / "configs")
    return tmp_path


def run(snippet: Snippet, where: Path) -> None:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"}
    if snippet.language == "python":
        cmd = [sys.executable, "-c", snippet.code]
    else:
        cmd = ["bash", "-euo", "pipefail", "-c", snippet.code]
    done = subprocess.run(
        cmd, cwd=where, env=env, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL
    )
    assert done.returncode == 0, (
        f"{snippet.where} failed ({done.returncode}):\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    )


# ---- the site builds, and a broken anchor breaks it ----------------------------------------------------
def mkdocs_build(root: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    return subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(root / "site")],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )


@pytest.mark.slow
def test_the_site_builds_strict_and_fails_on_a_renamed_heading(tmp_path):
    pytest.importorskip("mkdocs", reason="the docs extra (make test installs it)")
    pytest.importorskip("material", reason="the docs extra (make test installs it)")
    for name in ("docs", "scripts", "configs"):
        shutil.copytree(REPO / name, tmp_path / name, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(REPO / "mkdocs.yml", tmp_path / "mkdocs.yml")
    for name in ("src", "data", "benchmarks"):  # the code, and the results the pages' numbers come from
        (tmp_path / name).symlink_to(REPO / name)

    built = mkdocs_build(tmp_path)
    assert built.returncode == 0, built.stderr[-5000:]
    assert (tmp_path / "site" / "reference" / "cli.html").is_file()
    cli = (tmp_path / "site" / "reference" / "cli.html").read_text("utf-8")
    assert "verirag verify" in cli and "--label-field" in cli  # generated from the typer app
    http = (tmp_path / "site" / "reference" / "http-api.html").read_text("utf-8")
    assert "/v1/verify" in http and "VerifyRequest" in http  # generated from the OpenAPI document

    # threshold.md links to verify-existing-rag.md#a-log-file-verirag-verify: rename that heading
    guide = tmp_path / "docs" / "how-to" / "verify-existing-rag.md"
    text = guide.read_text("utf-8")
    assert "## A log file: `verirag verify`" in text
    assert "verify-existing-rag.md#a-log-file-verirag-verify" in (tmp_path / "docs/how-to/threshold.md").read_text()
    guide.write_text(text.replace("## A log file: `verirag verify`", "## Logs of answers"))
    broken = mkdocs_build(tmp_path)
    assert broken.returncode != 0
    said = broken.stdout + broken.stderr
    assert "does not contain an anchor '#a-log-file-verirag-verify'" in said, said[-3000:]


def names(code: str) -> tuple[set[str], set[str]]:
    """The names a block binds (assigns, imports, defines) and the names it reads."""
    import ast

    bound, read = set(), set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Name):
            (read if isinstance(node.ctx, ast.Load) else bound).add(node.id)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return bound, read


def undefined_names(snippet: Snippet) -> set[str]:
    """Names a block reads that neither it nor the python block above it on the page (which a reader
    has just run: a block may continue it) binds, nor Python provides: what a reader would have to guess."""
    import builtins

    bound, read = names(snippet.code)
    above = [s for s in snippets([snippet.path]) if s.language == "python" and s.line < snippet.line]
    if above:
        bound |= names(above[-1].code)[0]
    return read - bound - set(dir(builtins))


@pytest.mark.parametrize(
    "snippet",
    [s for s in RUN if s.language == "python" and not (s.marker or "").startswith("not-run")],
    ids=lambda s: s.where,
)
def test_a_run_python_snippet_defines_every_name_it_uses(snippet):
    """A block shown as runnable runs as shown: a test may not hand it a name (`llm`, `query_engine`)
    the reader never sees defined; a block that needs the reader's own object says so with not-run."""
    assert undefined_names(snippet) == set(), f"{snippet.where} uses names it never defines"


def test_the_readmes_example_agrees_with_the_demo_corpus():
    """The README's first example is about the demo corpus's lighthouse: its designer is the corpus's."""
    corpus = (REPO / "src/verirag/demo/corpus/halvorsen_lighthouse.md").read_text("utf-8")
    readme = (REPO / "README.md").read_text("utf-8")
    designer = re.search(r"design by the engineer (\w+ \w+)", corpus).group(1)
    assert f'"{designer} designed it."' in readme
    for page in [REPO / "README.md", *(REPO / "docs").rglob("*.md")]:
        assert "Ada Brennan" not in page.read_text("utf-8"), f"{page}: the demo corpus's engineer is {designer}"
