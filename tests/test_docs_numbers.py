"""The costs and scores the docs quote come from the committed results files (scripts/docs_numbers.py,
rendered into the pages by the MkDocs hook): every placeholder resolves, a value follows its file, and
no hand-typed cost of nli or the verifier is left to drift."""

from __future__ import annotations

import json
import re
import sys

import pytest
from readme import REPO, doc_files

sys.path.insert(0, str(REPO / "scripts"))
import docs_numbers

# a cost quoted in prose: "0.1 s an answer", "9-28 s per answer", "7.5 s a claim"
SECONDS = r"\b\d+(?:\.\d+)?(?:\s*(?:-|to)\s*\d+(?:\.\d+)?)?\s*s"
# ... or beside a judge: "0.1 s against 3-21 s", "the verifier's 0.1 s", "(about 0.1 s, no LLM)"
HAND_COST = re.compile(
    rf"{SECONDS} (?:an|per|a) (?:answer|claim)\b|{SECONDS} against {SECONDS}\b|verifier's {SECONDS}\b|{SECONDS}, no LLM"
)


def prose(text: str) -> str:
    """The page without its code blocks (commands and their comments are not quoted numbers)."""
    return re.sub(r"^```.*?^```", "", text, flags=re.S | re.M)


@pytest.fixture(autouse=True)
def fresh_values():
    docs_numbers.value.cache_clear()
    yield
    docs_numbers.value.cache_clear()


def test_every_placeholder_in_the_docs_resolves():
    found = set()
    for page in doc_files():
        text = page.read_text("utf-8")
        found |= set(docs_numbers.PLACEHOLDER.findall(text))
        rendered = docs_numbers.render(text)
        assert docs_numbers.PLACEHOLDER.search(rendered) is None
    assert {"nli_s_retrieved", "verifier_s", "heldout_docs_table"} <= found
    assert docs_numbers.render("write `{{ numbers.NAME }}`") == "write `{{ numbers.NAME }}`"  # code: as written
    with pytest.raises(KeyError, match="no such number"):
        docs_numbers.render("costs {{ numbers.made_up }}")


def test_no_hand_typed_cost_of_a_judge_is_left_in_the_docs():
    """nli's and the verifier's seconds an answer are quoted through a placeholder, never typed."""
    typed = []
    for page in doc_files()[1:]:  # the README: test_the_readme_quotes_the_generated_cost
        for line in prose(page.read_text("utf-8")).splitlines():
            typed += [f"{page.relative_to(REPO)}: {m.group(0)}" for m in HAND_COST.finditer(line)]
    # those left are measurements whose output is not committed, each saying where it comes from (a
    # benchmark command beside it; a study's dated run)
    assert sorted(typed) == [
        "docs/model-cards/verifier.md: 0.65-0.74 s an answer",
        "docs/results/dependable.md: 30 s an answer",
    ]


def test_the_readme_quotes_the_generated_cost():
    """The README is not built by the site: it is held to the generated value here."""
    readme = (REPO / "README.md").read_text("utf-8")
    about = docs_numbers.value("verifier_s_about")
    quoted = re.findall(r"trained verifier: ~(\S+ s) an answer", readme) + re.findall(
        r"verifier \(the default for answers you give it: ~(\S+ s),", readme
    )
    assert quoted == [about, about]


def test_a_value_follows_its_results_file(tmp_path, monkeypatch):
    """Rerunning a benchmark (a new results file) changes what the docs say, with no page edited."""
    own = tmp_path / "own_answers"
    for run in docs_numbers.OWN_RUNS:
        (own / run).mkdir(parents=True)
        rows = [{"header": True}] + [{"id": f"{run}:{i}", "score": 0.5, "seconds": 0.2 + i / 10} for i in range(3)]
        (own / run / "verifier-shipped.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    monkeypatch.setattr(docs_numbers, "OWN", own)
    assert docs_numbers.render("{{ numbers.verifier_s }} an answer") == "0.30 s an answer"
    for run in docs_numbers.OWN_RUNS:  # a slower verifier, measured again
        (own / run / "verifier-shipped.jsonl").write_text(json.dumps({"id": "a", "seconds": 0.5}) + "\n")
    docs_numbers.value.cache_clear()
    assert docs_numbers.render("{{ numbers.verifier_s }} an answer") == "0.50 s an answer"
    for run in docs_numbers.OWN_RUNS:  # no timing at all: the build fails rather than quote nothing
        (own / run / "verifier-shipped.jsonl").write_text(json.dumps({"id": "a", "score": 0.5}) + "\n")
    docs_numbers.value.cache_clear()
    with pytest.raises(ValueError, match="no seconds"):
        docs_numbers.value("verifier_s")


def test_the_committed_values_are_the_measurements_the_results_pages_report():
    """The generated numbers are those the benchmarks printed when they ran (the pages' earlier text)."""
    assert docs_numbers.value("nli_evidence_own_hotpotqa") == "40 | 9.37 | 1.13 | **0.120**"
    assert docs_numbers.value("nli_s_retrieved") == "6.4-9.4 s"
    assert docs_numbers.value("verifier_s_manpages") == "0.04 s" and docs_numbers.value("self_check_s") == "0.84 s"
    table = docs_numbers.value("heldout_docs_table")
    assert "| verifier (shipped) | 150 | 0.866 [0.807, 0.916] | +0.174 [+0.074, +0.275] |" in table
    assert "| warm (the verifier shipped before) | 150 | 0.834 [0.765, 0.892] | +0.142 [+0.039, +0.240] |" in table
    final = docs_numbers.value("final_docs_table")  # issue 47's final table, read once on 2026-12-03
    assert "| verifier (shipped) | 300 | 0.908 [0.872, 0.945] | +0.112 [+0.089, +0.281] |" in final
    assert "| nli (qwen2.5-1.5b) | 300 | 0.796 [0.630, 0.819] |  |" in final


def test_docs_build_hook_renders_numbers():
    sys.path.insert(0, str(REPO / "scripts"))
    import docs_hooks

    assert docs_hooks.on_page_markdown("nli: {{ numbers.nli_s_gold }}", None, None, None) == (
        f"nli: {docs_numbers.value('nli_s_gold')}"
    )
