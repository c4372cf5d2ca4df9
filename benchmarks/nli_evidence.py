"""nli reading only the verifier's evidence (`vanilla+nli(premise=evidence)`) against nli reading
every passage: how well each ranks correct answers above the others, and what each costs.

`score` runs one arm of the LLM judge (qwen2.5-1.5b, the request cache off, so that seconds are
what an answer costs) over one evaluation set, resumably, and writes one row per answer:

    {"id", "score", "seconds", "error", "words"}      (words: the passages' words, what the full arm reads)

- `dev`: instruct_qa_human's HotpotQA and TopiOCQA answers that the committed nli scores cover
  (data/verifier/dev_scores/nli-qwen2.5-1.5b.jsonl), each read with its conversation. Evaluation only.
- `own`: the held-out own-answer run data/verifier/own_answers/held-out-nli-qwen2.5-1.5b, or another
  committed own-answer run given with `--run DIR` (its questions and passages rebuilt from the
  benchmark files as benchmarks/rescore_own_answers.py does; ids are the answers' generation keys, so
  `benchmarks/verifier_own_answers.py RUN --verifier-scores nli_evidence=FILE` reads them as a column).
- `docs`: the man-page claims of benchmarks/heldout_docs.py (runs/heldout_docs/log.jsonl).

`--arm llm_judge` scores with `vanilla+llm_judge`'s judge instead (one question over all the passages;
give --out): a candidate for the judge of `ask`'s own answers, where it reads only what follows the
passages (its instruction and the answer, from the last 64-token batch the two prompts share), the
passages being the generation's prompt prefix; so its seconds here are not its cost there.

`compare` prints, per set, the AUROC of the verifier, of nli over the evidence and of nli over the
passages (the committed scores, or this script's passages arm where it scored every answer the evidence
arm did: on dev it reads TopiOCQA's conversation, as the evidence arm does), with 95% intervals
resampling questions and paired differences to nli, and the mean seconds of the two arms on the
answers both timed in the same run, with their ratio.

    VERIRAG_DATA_DIR=../shared/data python benchmarks/nli_evidence.py score own --arm evidence \\
        --out data/verifier/own_answers/held-out-nli-qwen2.5-1.5b/nli-evidence.jsonl
    VERIRAG_DATA_DIR=../shared/data python benchmarks/nli_evidence.py score own --arm passages --limit 40 \\
        --out data/verifier/own_answers/held-out-nli-qwen2.5-1.5b/nli-passages-timed.jsonl
    VERIRAG_DATA_DIR=../shared/data python benchmarks/nli_evidence.py compare

The rows hold ids, scores and timings only, never benchmark text.
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from heldout_docs import LOG, heldout_rows
from verifier_dev import dev_rows

from verirag.metrics.calibration import auroc
from verirag.metrics.stats import group_bootstrap_intervals

ROOT = Path(__file__).resolve().parents[1]
DEV_SCORES = ROOT / "data" / "verifier" / "dev_scores"
OWN = ROOT / "data" / "verifier" / "own_answers" / "held-out-nli-qwen2.5-1.5b"
DOCS = ROOT / "data" / "verifier" / "heldout_docs"
MODEL = "qwen2.5-1.5b"
# where `compare` looks for each set's rows: {arm: file}
FILES = {
    "dev": {
        "evidence": DEV_SCORES / "nli-evidence-qwen2.5-1.5b.jsonl",
        "passages": DEV_SCORES / "nli-passages-timed-qwen2.5-1.5b.jsonl",
    },
    "own": {"evidence": OWN / "nli-evidence.jsonl", "passages": OWN / "nli-passages-timed.jsonl"},
    "docs": {
        "evidence": DOCS / "nli-evidence-qwen2.5-1.5b.jsonl",
        "passages": DOCS / "nli-passages-timed-qwen2.5-1.5b.jsonl",
    },
}


# ---- what each set is: (id, question as read, answer, passages, label, group) ---------------------
def dev_items() -> list[tuple]:
    from verirag.conversation import in_context
    from verirag.types import Passage

    committed = _read(DEV_SCORES / f"nli-{MODEL}.jsonl")
    out = []
    for r in dev_rows():
        if r["id"] in committed:
            q = in_context(r["user_input"], r.get("history") or [])
            ps = [Passage(id=str(i), text=t) for i, t in enumerate(r["retrieved_contexts"])]
            out.append((r["id"], q, r["response"] or "", ps, r["label"], r["group"]))
    return sorted(out, key=lambda t: t[0])


def own_items(run: Path = OWN, *, whole: bool = False) -> list[tuple]:
    """A follow-up is read in its conversation as `ask` reads it (an InContext question: the judge
    sees the turns with their speakers, the verifier choosing the evidence reads the bare turns),
    never flattened into one question string. `whole`: a pruned run's passages as retrieved, before
    pruning (the passages arm only: nli over every passage, whole)."""
    import rescore_own_answers as ro

    from verirag.conversation import in_context

    answers = sorted(ro.run_answers(ro.read_records(run)), key=lambda a: a["key"])
    examples = ro.load_examples(ro.config_for(run, None), answers, whole=whole)
    labels = own_labels(run)
    out = []
    for a in answers:
        e = examples[(a["dataset"], a["example_id"])]
        out.append(
            (
                a["key"],
                in_context(e.question, e.history),
                a["answer"],
                list(e.passages),
                labels.get(a["key"]),
                a["group"],
            )
        )
    return out


def docs_items() -> list[tuple]:
    from verirag.types import Passage

    out = []
    for r in heldout_rows(LOG):
        ps = [Passage(id=str(i), text=t) for i, t in enumerate(r["retrieved_contexts"])]
        out.append((r["id"], r["user_input"], r["response"], ps, r["label"], r["group"]))
    return out


ITEMS = {"dev": dev_items, "own": own_items, "docs": docs_items}


def dataset_of(key: str) -> str:
    """The dataset an id names: "hotpot_qa:12:model" (dev), "nq|qwen2.5-1.5b|..." (own); a man-page
    claim's id ("doc_claims/docs/...") is "docs"."""
    m = re.match(r"([^:|/]+)[:|]", key)
    return m.group(1) if m else "docs"


def own_labels(run: Path = OWN) -> dict[str, int]:
    """generation key -> the run's correctness label (its records' `faithful`: every method's record
    of one answer carries the same)."""
    from verirag_lab.train.cascade import generation_key, run_records

    return {generation_key(r): int(r["faithful"]) for r in run_records(run) if r.get("faithful") is not None}


# ---- score ---------------------------------------------------------------------------------------
def score(
    which: str, arm: str, out: Path, *, limit: int | None = None, evidence_chunks: int = 1, run: Path | None = None
) -> int:
    from rich.progress import Progress

    # on a pruned run only the passages arm is defined: nli over every passage as retrieved, whole
    items = own_items(run, whole=arm == "passages") if which == "own" and run is not None else ITEMS[which]()
    if limit is not None:  # the first `limit` of each dataset, so that every dataset is timed
        taken: dict[str, int] = {}
        kept = []
        for t in items:
            ds = dataset_of(t[0])
            if taken.get(ds, 0) < limit:
                taken[ds] = taken.get(ds, 0) + 1
                kept.append(t)
        items = kept
    done = set(_read(out)) if out.is_file() else set()
    todo = [t for t in items if t[0] not in done]
    nli = judge(arm, evidence_chunks)
    if getattr(nli, "evidence_finder", None) is not None:
        _ = nli.evidence_finder.model.reader  # load the verifier before the first answer is timed
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out, "a", encoding="utf-8") as fh, Progress() as bar:
        task = bar.add_task(
            f"{which}: {arm}" if arm in ("llm_judge", "no_context") else f"{which}: nli over the {arm}", total=len(todo)
        )
        for key, question, answer, passages, _label, _group in todo:
            t = time.perf_counter()
            v = nli.verify(question, answer, passages)
            row = {
                "id": key,
                "score": None if v.score is None or math.isnan(v.score) else float(v.score),
                "seconds": round(time.perf_counter() - t, 3),
                "error": v.error,
                "words": sum(len(p.text.split()) for p in passages),
            }
            if getattr(nli, "evidence_finder", None) is not None:  # what it read, found again outside the timing
                row |= what_was_read(nli, question, answer, passages)
            fh.write(json.dumps(row) + "\n")
            fh.flush()
            bar.advance(task)
    print(f"{which}, {arm}: {len(todo)} scored, {len(done)} already in {out}")
    return 0


def judge(arm: str, evidence_chunks: int = 1):
    """The judge of `arm` on qwen2.5-1.5b, the request cache off: nli over the verifier's evidence
    (`evidence`) or over every passage (`passages`), or `llm_judge`: one question over all the
    passages together (which can join evidence that two passages hold; after `ask`'s own answer it
    reads only what follows the passages, which are the generation's prompt prefix in the shared
    layout, so the seconds timed here, reading the whole prompt, are not what it costs there)."""
    from verirag.awf.entailment.llm_judge import LLMJudgeEntailment
    from verirag.awf.predictors.llm_judge import LLMJudgePredictor
    from verirag.awf.predictors.nli import PostAnsweringNLI
    from verirag.llm.factory import load_llm

    llm = load_llm(MODEL, cache=False)
    if arm == "llm_judge":
        return LLMJudgePredictor(llm)
    if arm == "no_context":
        return NoContextLikelihood(llm)
    options = {"premise": arm} | ({"evidence_chunks": evidence_chunks} if arm == "evidence" else {})
    return PostAnsweringNLI(LLMJudgeEntailment(llm), **options)


class NoContextLikelihood:
    """`no_context`: the answer's mean token log-probability under the no-context prompt (the question
    alone), by teacher forcing: the half of Dual Generation (AwF 4.3; Wu et al., 2024) that the
    generation does not already know. Minus the generation's own mean log-probability with the
    passages (the run's `logprob_mean`), it says how much the passages made the answer likely. One
    short prompt after an answer: question and answer, no passages."""

    def __init__(self, llm):
        from verirag.prompts import load_prompt

        self.llm, self.prompt = llm, load_prompt("no_context")

    def verify(self, question, answer, passages):
        from types import SimpleNamespace

        from verirag.errors import VeriragError

        try:
            scored = self.llm.score(self.prompt.messages(question=question), answer)
        except VeriragError as e:
            return SimpleNamespace(score=None, error=str(e))
        if not scored.tokens:
            return SimpleNamespace(score=None, error="the backend scored no tokens")
        return SimpleNamespace(score=scored.mean_logprob, error=None)


def what_was_read(nli, question, answer, passages) -> dict:
    """{"premise_words": the evidence's words, "read": "evidence" or "passages" (the fall-back)}."""
    from verirag.awf.predictors.nli import evidence_saves
    from verirag.errors import InputError

    try:
        premise, _ = nli.evidence(question, answer, passages)
    except InputError:
        return {"premise_words": None, "read": "passages"}
    return {
        "premise_words": len(premise.split()),
        "read": "evidence" if evidence_saves(premise, passages) else "passages",
    }


# ---- compare -------------------------------------------------------------------------------------
def _read(path: Path) -> dict[str, dict]:
    """id -> its latest row (a resumed run appends); {} when the file is missing."""
    if not Path(path).is_file():
        return {}
    out = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                r = json.loads(line)
                if "id" in r:
                    out[r["id"]] = r
                elif "key" in r:  # benchmarks/rescore_own_answers.py's rows
                    out[r["key"]] = {"id": r["key"], **r}
    return out


def reference_scores(which: str) -> tuple[dict[str, float], dict[str, float]]:
    """(nli's committed scores, the committed scores of the verifier whose evidence nli read) of a set,
    by id: the verifier shipped when the evidence runs were made (data/verifier/candidates/warm)."""
    if which == "dev":
        nli, ver = _read(DEV_SCORES / f"nli-{MODEL}.jsonl"), _read(DEV_SCORES / "verifier-warm.jsonl")
    elif which == "docs":
        nli, ver = _read(DOCS / f"nli-{MODEL}.jsonl"), _read(DOCS / "verifier-warm.jsonl")
    else:
        from verirag_lab.train.cascade import generation_key, run_records

        nli = {
            generation_key(r): {"score": r["score"]}
            for r in run_records(OWN)
            if r.get("method") == "vanilla+nli" and not r.get("error") and r.get("score") is not None
        }
        ver = _read(OWN / "verifier-warm.jsonl")
    return (
        {k: float(r["score"]) for k, r in nli.items() if r.get("score") is not None},
        {k: float(r["score"]) for k, r in ver.items() if r.get("score") is not None},
    )


def subsets(which: str, items: list[tuple]) -> list[tuple[str, list[tuple]]]:
    if which == "dev":
        return [(f"dev {ds}", [t for t in items if t[0].startswith(ds + ":")]) for ds in ("hotpot_qa", "topiocqa")]
    if which == "own":
        by = [(f"own {ds}", [t for t in items if t[0].startswith(ds + "|")]) for ds in ("hotpotqa", "nq")]
        return [*by, ("own pooled", items)]
    return [("docs manpages", items)]


def compare_set(name: str, items: list[tuple], columns: dict[str, dict[str, float]], resamples: int) -> dict:
    """AUROC of each column on the answers every column scored, [95%], and minus "nli" (paired)."""
    kept = [t for t in items if t[4] is not None and all(t[0] in c for c in columns.values())]
    y = np.array([t[4] for t in kept])
    groups = [t[5] for t in kept]
    cols = {k: np.array([c[t[0]] for t in kept]) for k, c in columns.items()}

    def stat(ix):
        out = {k: np.array([auroc(v[r], y[r]) for r in ix]) for k, v in cols.items()}
        return out | {f"{k} - nli": out[k] - out["nli"] for k in cols if k != "nli"}

    res = group_bootstrap_intervals(stat, groups, n_resamples=resamples, seed=0)
    return {"set": name, "n": len(kept), **{k: [r.estimate, r.low, r.high] for k, r in res.items()}}


def _ci(v: list[float], sign: str = "") -> str:
    return f"{v[0]:{sign}.3f} [{v[1]:{sign}.3f}, {v[2]:{sign}.3f}]"


def compare(resamples: int) -> int:
    print("| set | answers | verifier | nli over the evidence | nli | evidence minus nli | verifier minus nli |")
    print("|---|---|---|---|---|---|---|")
    timing = []
    for which, load in ITEMS.items():
        evidence = _read(FILES[which]["evidence"])
        if not evidence:
            print(f"| {which} | not scored: run `score {which} --arm evidence` | | | | | |")
            continue
        timed = _read(FILES[which]["passages"])
        items = load()
        nli, ver = reference_scores(which)
        if timed and set(evidence) <= set(timed):  # nli timed here on every answer: the same reading
            nli = {k: r["score"] for k, r in timed.items() if r["score"] is not None}
            print(f"| ({which}: nli is this script's passages arm, {FILES[which]['passages'].name}) | | | | | | |")
        columns = {
            "verifier": ver,
            "nli over the evidence": {k: r["score"] for k, r in evidence.items() if r["score"] is not None},
            "nli": nli,
        }
        for name, part in subsets(which, items):
            r = compare_set(name, part, columns, resamples)
            if not r["n"]:
                continue
            print(
                f"| {name} | {r['n']} | {_ci(r['verifier'])} | {_ci(r['nli over the evidence'])} | {_ci(r['nli'])} | "
                f"{_ci(r['nli over the evidence - nli'], '+')} | {_ci(r['verifier - nli'], '+')} |"
            )
        read = [r.get("read") for r in evidence.values() if r.get("read")]
        if read:
            words = [r["premise_words"] / r["words"] for r in evidence.values() if r.get("read") == "evidence"]
            print(
                f"| ({which}: {read.count('evidence')} of {len(read)} read the evidence, "
                f"{np.mean(words) if words else 0:.0%} of the passages' words on average; the rest every passage) "
                "| | | | | | |"
            )
        both = [k for k in timed if k in evidence and timed[k]["error"] is None and evidence[k]["error"] is None]
        if both:
            full = np.array([timed[k]["seconds"] for k in both])
            ev = np.array([evidence[k]["seconds"] for k in both])
            timing.append((which, len(both), full.mean(), ev.mean(), ev.mean() / full.mean()))
    if timing:
        print("\n| set | answers timed by both | nli s / answer | over the evidence | ratio |")
        print("|---|---|---|---|---|")
        for which, n, full, ev, ratio in timing:
            print(f"| {which} | {n} | {full:.2f} | {ev:.2f} | {ratio:.3f} |")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    sc = sub.add_parser("score", help="run one arm of nli over one set (cache off), resumably")
    sc.add_argument("set", choices=sorted(ITEMS))
    sc.add_argument("--arm", choices=("evidence", "passages", "llm_judge", "no_context"), required=True)
    sc.add_argument("--out", type=Path, default=None, help="default: the file `compare` reads")
    sc.add_argument(
        "--limit", type=int, default=None, help="only the first N answers of each dataset (by id; docs: log order)"
    )
    sc.add_argument("--evidence-chunks", type=int, default=1, help="chunks per answer sentence (evidence arm)")
    sc.add_argument("--run", type=Path, default=None, help="own: another committed own-answer run (give --out too)")
    cp = sub.add_parser("compare", help="the tables, from the rows written")
    cp.add_argument("--resamples", type=int, default=2000)
    cp.add_argument(
        "--evidence", action="append", default=[], metavar="SET=FILE", help="read SET's evidence arm from FILE"
    )
    args = ap.parse_args(argv)
    if args.cmd == "score":
        if args.run is not None and (args.set != "own" or args.out is None):
            raise SystemExit("--run is for the own set, with --out (the file `compare` reads is the held-out run's)")
        if args.out is None and args.arm not in FILES[args.set]:
            raise SystemExit(f"--arm {args.arm} has no default file: give --out")
        out = args.out or FILES[args.set][args.arm]
        return score(args.set, args.arm, out, limit=args.limit, evidence_chunks=args.evidence_chunks, run=args.run)
    for spec in args.evidence:
        which, _, path = spec.partition("=")
        if which not in FILES or not path:
            raise SystemExit(f"--evidence takes SET=FILE with SET one of {', '.join(FILES)}, got {spec!r}")
        FILES[which]["evidence"] = Path(path)
    return compare(args.resamples)


if __name__ == "__main__":
    raise SystemExit(main())
