"""The costs and scores the docs quote, computed from the committed results files as the site builds
(scripts/docs_hooks.py), so that a page cannot drift from the measurement it quotes.

A page writes `{{ numbers.NAME }}` where it quotes a number; the build puts the value in its place, and
an unknown NAME fails the build. Each NAME is computed below from one committed file under data/ (ids,
scores, seconds: no benchmark text), named in its docstring. To change a number, change the results
file (rerun its benchmark), not the page. tests/test_docs_numbers.py holds README.md, which the site
does not build, to the same values.
"""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from collections.abc import Callable
from functools import cache
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "data" / "verifier"
OWN = DATA / "own_answers"
OWN_RUNS = ("held-out-qwen2.5-1.5b", "held-out-nq2-qwen2.5-1.5b", "held-out-nli-qwen2.5-1.5b")
# in inline code (`{{ numbers.NAME }}`) it is shown as written, as the docs about the docs show it
PLACEHOLDER = re.compile(r"(?<!`)\{\{\s*numbers\.(\w+)\s*\}\}(?!`)")


def rows(path: Path) -> list[dict]:
    """A committed score file's rows (a header row, where there is one, left out)."""
    out = []
    for line in path.read_text("utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            if not row.get("header"):
                out.append(row)
    return out


def mean_seconds(paths: list[Path], keep: Callable[[dict], bool] = lambda r: True) -> float:
    secs = [r["seconds"] for p in paths for r in rows(p) if keep(r) and isinstance(r.get("seconds"), (int, float))]
    if not secs:
        raise ValueError(f"no seconds in {', '.join(str(p) for p in paths)}")
    return sum(secs) / len(secs)


# ---- the numbers ----------------------------------------------------------------------------------
def nli_s_per_dataset() -> dict[str, float]:
    """nli (qwen2.5-1.5b) over 5 retrieved passages, mean seconds an answer per dataset, on the local
    generator's own answers, request cache off, quiet 2 cores:
    data/verifier/own_answers/held-out-nli-qwen2.5-1.5b/nli-passages-timed.jsonl."""
    path = OWN / "held-out-nli-qwen2.5-1.5b" / "nli-passages-timed.jsonl"
    datasets = sorted({r["id"].split("|", 1)[0] for r in rows(path)})
    return {d: mean_seconds([path], lambda r, d=d: r["id"].startswith(d + "|")) for d in datasets}


def nli_s_retrieved() -> str:
    per = nli_s_per_dataset().values()
    return f"{min(per):.1f}-{max(per):.1f} s"


def nli_s_gold() -> str:
    """nli over the dev set's short gold passages (1-2, about 100-160 words):
    data/verifier/dev_scores/nli-passages-timed-qwen2.5-1.5b.jsonl."""
    return f"{mean_seconds([DATA / 'dev_scores' / 'nli-passages-timed-qwen2.5-1.5b.jsonl']):.1f} s"


def nli_s_manpages() -> str:
    """nli on the 150 held-out man page claims (3 paragraphs each): data/verifier/heldout_docs/nli-qwen2.5-1.5b.jsonl."""
    return f"{mean_seconds([DATA / 'heldout_docs' / 'nli-qwen2.5-1.5b.jsonl']):.1f} s"


def verifier_s() -> str:
    """The shipped verifier over 5 retrieved passages, mean seconds an answer over the three own-answer
    runs (one thread): data/verifier/own_answers/*/verifier-shipped.jsonl."""
    return f"{mean_seconds([OWN / run / 'verifier-shipped.jsonl' for run in OWN_RUNS]):.2f} s"


def verifier_s_about() -> str:
    """verifier_s to one significant figure, for prose ("about 0.1 s")."""
    return f"{float(verifier_s().split()[0]):.1g} s"


def verifier_s_manpages() -> str:
    """The shipped verifier on the 150 man page claims: data/verifier/heldout_docs/verifier-shipped.jsonl."""
    return f"{mean_seconds([DATA / 'heldout_docs' / 'verifier-shipped.jsonl']):.2f} s"


def verify_step_s(method: str) -> float:
    """`method`'s verify step, mean seconds an answer over the two own-answer runs: the `timings.verify`
    of data/verifier/own_answers/{held-out,held-out-nq2}-qwen2.5-1.5b/results.jsonl (their
    vanilla+verifier is v1, the verifier shipped when they ran)."""
    secs = [
        r["details"]["timings"]["verify"]
        for run in OWN_RUNS[:2]
        for r in rows(OWN / run / "results.jsonl")
        if r["method"] == method and "verify" in (r.get("details") or {}).get("timings", {})
    ]
    return sum(secs) / len(secs)


def self_check_s() -> str:
    """`vanilla+self_check`'s verify step (one LLM call, the prompt cached), as above."""
    return f"{verify_step_s('vanilla+self_check'):.2f} s"


def v1_verify_step_s() -> str:
    return f"{verify_step_s('vanilla+verifier'):.2f} s"


def nli_evidence_s_own(chunks: str = "") -> str:
    """nli over the verifier's evidence (one chunk, or two), mean seconds over the 150 own answers:
    data/verifier/own_answers/held-out-nli-qwen2.5-1.5b/nli-evidence{,-2chunks}.jsonl."""
    return f"{mean_seconds([OWN / 'held-out-nli-qwen2.5-1.5b' / f'nli-evidence{chunks}.jsonl']):.2f}"


def verifier_share_of_self_check() -> str:
    """The verifier's seconds as a fraction of self_check's (the two above), as "1/N"."""
    return f"1/{float(self_check_s().split()[0]) / float(verifier_s().split()[0]):.0f}"


def nli_over_verifier() -> str:
    """How many times the verifier's seconds nli takes over 5 retrieved passages (the two above)."""
    per = nli_s_per_dataset().values()
    v = float(verifier_s().split()[0])
    return f"{min(per) / v:.0f}-{max(per) / v:.0f}x"


def nli_evidence_row(which: str) -> str:
    """One row's last three cells of nli-evidence.md's "What it saves": nli's mean seconds an answer over
    the passages, over the verifier's evidence, and their ratio, over the answers both arms timed, from
    the committed nli-passages-timed*.jsonl and nli-evidence*.jsonl of each set."""
    own = OWN / "held-out-nli-qwen2.5-1.5b"
    pairs = {
        "own_hotpotqa": (own / "nli-passages-timed.jsonl", own / "nli-evidence.jsonl", "hotpotqa|"),
        "own_nq": (own / "nli-passages-timed.jsonl", own / "nli-evidence.jsonl", "nq|"),
        "manpages": (DATA / "heldout_docs" / "nli-passages-timed-qwen2.5-1.5b.jsonl",
                     DATA / "heldout_docs" / "nli-evidence-qwen2.5-1.5b.jsonl", ""),
        "dev": (DATA / "dev_scores" / "nli-passages-timed-qwen2.5-1.5b.jsonl",
                DATA / "dev_scores" / "nli-evidence-qwen2.5-1.5b.jsonl", ""),
    }  # fmt: skip
    whole, evidence, prefix = pairs[which]
    a = {r["id"]: r["seconds"] for r in rows(whole) if r["id"].startswith(prefix)}
    b = {r["id"]: r["seconds"] for r in rows(evidence) if r["id"] in a}
    x, y = (sum(d[k] for k in b) / len(b) for d in (a, b))
    return f"{len(b)} | {x:.2f} | {y:.2f} | **{y / x:.3f}**"


def _docs_table(folder: Path, runs: dict[str, str], order: tuple[str, ...], extra: dict | None = None) -> str:
    """A documentation claims table by `benchmarks/heldout_docs.py compare` over the committed score
    files of `folder` (`runs`: judge -> file; labels and seconds are in them), 2000 resamples of
    documents; `extra`: judge -> its row, compared with nli on its own resamples."""
    bench = _module("heldout_docs", REPO / "benchmarks" / "heldout_docs.py")
    table, _ = bench.compare({name: bench.read_scores(folder / file) for name, file in runs.items()})
    names = {
        "verifier": "verifier (shipped)",
        "warm": "warm (the verifier shipped before)",
        "nli": "nli (qwen2.5-1.5b)",
        "llm_judge": "llm_judge (qwen2.5-1.5b)",
        "cascade": "cascade (shipped band)",
    }
    by = {r["judge"]: r for r in table} | (extra or {})
    to_llm = {"verifier": 0.0, "warm": 0.0, "nli": 1.0, "llm_judge": 1.0}  # a judge alone: none or all
    return bench.markdown([{**by[k], "judge": names[k], "to_llm": to_llm.get(k, by[k]["to_llm"])} for k in order])


def heldout_docs_table() -> str:
    """The AUROC table of the held-out man page claims: data/verifier/heldout_docs/."""
    folder = DATA / "heldout_docs"
    runs = {
        "verifier": "verifier-shipped.jsonl",
        "nli": "nli-qwen2.5-1.5b.jsonl",
        "llm_judge": "llm_judge-qwen2.5-1.5b.jsonl",
    }
    bench = _module("heldout_docs", REPO / "benchmarks" / "heldout_docs.py")
    before, _ = bench.compare(
        {"warm": bench.read_scores(folder / "verifier-warm.jsonl"), "nli": bench.read_scores(folder / runs["nli"])}
    )
    warm = {"warm": next(r for r in before if r["judge"] == "warm")}
    return _docs_table(folder, runs, ("verifier", "cascade", "warm", "nli", "llm_judge"), warm)


def final_docs_table() -> str:
    """The final table of issue 47: claims about the GNU Info manuals, read once (2026-12-03):
    data/verifier/final_docs/."""
    runs = {"verifier": "verifier-shipped.jsonl", "nli": "nli-qwen2.5-1.5b.jsonl"}
    return _docs_table(DATA / "final_docs", runs, ("verifier", "cascade", "nli"))


NUMBERS: dict[str, Callable[[], str]] = {
    "nli_s_retrieved": nli_s_retrieved,
    "nli_s_gold": nli_s_gold,
    "nli_s_manpages": nli_s_manpages,
    "verifier_s": verifier_s,
    "verifier_s_about": verifier_s_about,
    "verifier_s_manpages": verifier_s_manpages,
    "self_check_s": self_check_s,
    "v1_verify_step_s": v1_verify_step_s,
    "nli_evidence_s_own": nli_evidence_s_own,
    "nli_evidence_2chunks_s_own": lambda: nli_evidence_s_own("-2chunks"),
    "verifier_share_of_self_check": verifier_share_of_self_check,
    "nli_over_verifier": nli_over_verifier,
    "heldout_docs_table": heldout_docs_table,
    "final_docs_table": final_docs_table,
    **{f"nli_evidence_{k}": (lambda k=k: nli_evidence_row(k)) for k in ("own_hotpotqa", "own_nq", "manpages", "dev")},
}


@cache
def value(name: str) -> str:
    if name not in NUMBERS:
        raise KeyError(f"{{{{ numbers.{name} }}}}: no such number; scripts/docs_numbers.py has {', '.join(NUMBERS)}")
    return NUMBERS[name]()


def render(markdown: str) -> str:
    """`markdown` with every `{{ numbers.NAME }}` replaced by its value."""
    return PLACEHOLDER.sub(lambda m: value(m.group(1)), markdown)


def _module(name: str, path: Path):
    spec = importlib.util.spec_from_file_location(f"_docs_{name}", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module
