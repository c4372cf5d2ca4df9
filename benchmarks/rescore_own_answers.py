"""Score the committed answers of a `verirag eval` run with any trained verifier, without an LLM call.

An eval run's records (data/verifier/own_answers/*: qwen2.5-1.5b's answers to the held-out
questions, committed without benchmark text) keep each generated answer, not the question or the
passages the generator read. This rebuilds those from the benchmark files with the run's config
(the grid's own `load_examples`: same loaders, options, seeds; only the run's questions), scores
each committed answer with a verifier folder (`verirag train verifier --out DIR`) the way the
run's `vanilla+verifier` did (`TrainedVerifierPredictor` through the answer core's `VerifyGiven`
and `AnswerRules`: a declined answer scores 0), and writes one row per generated answer:

    {"key", "dataset", "example_id", "group", "score", "seconds"}       (+ "error" when it failed)

(+ "raw_score" and "rules" when an answer rule changed the score: a declined answer, "the documents
do not say", scores 0. Runs recorded before that rule, 2026-11-25, hold the raw score of such an
answer: one NQ answer of held-out-nq2; compare a new verifier with the shipped one rescored here,
not with the committed column, for both to read the same rules.)

after a header line {"header": true, "verifier": {folder, name, digest, fingerprints, ...}, ...}.
`key` is the answer's generation key (`generation_key`: dataset|model|example_id|generation, the
key of `verirag_lab.train.stack_features`), shared by every method's record over that answer. No
benchmark text is written. A rerun with the same verifier skips the rows already in FILE.

    VERIRAG_DATA_DIR=../shared/data python benchmarks/rescore_own_answers.py \\
        data/verifier/own_answers/held-out-nli-qwen2.5-1.5b --verifier runs/verifiers/issue36-joint \\
        --out data/verifier/own_answers/held-out-nli-qwen2.5-1.5b/verifier-issue36-joint.jsonl

    # the check that the inputs are the run's: v1, the verifier that made the committed runs,
    # reproduces their vanilla+verifier scores (the largest difference is printed at the end of every run)
    VERIRAG_DATA_DIR=../shared/data python benchmarks/rescore_own_answers.py \\
        data/verifier/own_answers/held-out-qwen2.5-1.5b --verifier data/verifier/candidates/v1 \\
        --out runs/rescored/held-out-qwen2.5-1.5b-v1.jsonl

    # the scores as a column of the paired table (verifier_own_answers.py reads them by key)
    python benchmarks/verifier_own_answers.py data/verifier/own_answers/held-out-nli-qwen2.5-1.5b \\
        --verifier-scores joint=data/verifier/own_answers/held-out-nli-qwen2.5-1.5b/verifier-issue36-joint.jsonl

The config is found by the run folder's name for the three committed runs (`CONFIGS`), else give
`--config`. Heavier runs beside other work: `nice -n 10` and VERIRAG_THREADS=1 (torch threads).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from dataclasses import replace
from pathlib import Path
from typing import Any

from verirag_lab.train.cascade import generation_key
from verirag_lab.train.cascade import run_records as read_records

ROOT = Path(__file__).resolve().parents[1]
OWN_ANSWERS = ROOT / "data" / "verifier" / "own_answers"
CONFIGS = {  # committed run folder -> the config that made it
    "held-out-qwen2.5-1.5b": ROOT / "configs" / "verifier-held-out.yaml",
    "held-out-nq2-qwen2.5-1.5b": ROOT / "configs" / "verifier-held-out-nq2.yaml",
    "held-out-nli-qwen2.5-1.5b": ROOT / "configs" / "verifier-held-out-nli.yaml",
    "own-answers-qwen2.5-1.5b": ROOT / "configs" / "own-answers.yaml",
    "own-answers-verifier-qwen2.5-1.5b": ROOT / "configs" / "own-answers.yaml",
    "own-answers-nq-verifier-qwen2.5-1.5b": ROOT / "configs" / "own-answers-nq.yaml",
    "own-answers-followup-verifier-qwen2.5-1.5b": ROOT / "configs" / "own-answers-followup.yaml",
    "own-answers-pruned-qwen2.5-1.5b": ROOT / "configs" / "own-answers-pruned.yaml",
    "own-answers-nq-pruned-qwen2.5-1.5b": ROOT / "configs" / "own-answers-nq-pruned.yaml",
    "own-answers-followup-pruned-qwen2.5-1.5b": ROOT / "configs" / "own-answers-followup-pruned.yaml",
    # their examples are written by benchmarks/own_answers_support.py (each from its own folder: see there)
    "own-answers-support-qwen2.5-1.5b": ROOT / "configs" / "own-answers-support.yaml",
    "own-answers-support2-qwen2.5-1.5b": ROOT / "configs" / "own-answers-support2.yaml",
}
CHECK_METHOD = "vanilla+verifier"  # the run's records whose scores the shipped verifier reproduces


def run_answers(records: Iterable[dict[str, Any]], check_method: str = CHECK_METHOD) -> list[dict[str, Any]]:
    """One entry per generated answer (records of GENERATOR+PREDICTOR methods only): key, dataset,
    model, example_id, group, the answer's text, and `committed`: the score `check_method`'s
    record gave it (None without one)."""
    out: dict[str, dict[str, Any]] = {}
    for r in records:
        d = r.get("details") or {}
        if "generator" not in d or "predictor" not in d:  # a unified method judges its own answer
            continue
        key = generation_key(r)
        a = out.setdefault(
            key,
            {
                "key": key,
                "dataset": r["dataset"],
                "model": r.get("model"),
                "example_id": str(r["example_id"]),
                "group": r.get("group") or str(r["example_id"]),
                "answer": r.get("answer") or "",
                "committed": None,
                "generation": d.get("generation"),
                "generator": (r.get("method_spec") or {}).get("name", r.get("method")),
                "generator_options": (r.get("method_spec") or {}).get("options") or {},
                "model_fingerprint": d.get("model_fingerprint") or "",
                "n_passages": len(d["per_passage"]) if isinstance(d.get("per_passage"), list) else None,
                "prune": d.get("prune"),  # the pruner's report where the run pruned (kept sentences, no text)
            },
        )
        if (r.get("answer") or "") != a["answer"]:
            raise SystemExit(f"records of one generation disagree on the answer ({key}): the run mixes set-ups")
        if r.get("method") == check_method and not r.get("error") and r.get("score") is not None:
            a["committed"] = float(r["score"])
            a["committed_rules"] = d.get("answer_rules") or []
    return list(out.values())


def config_for(run: Path, config: str | Path | None) -> Path:
    if config is not None:
        return Path(config)
    found = CONFIGS.get(run.resolve().name)
    if found is None:
        raise SystemExit(f"which config made {run}? pass --config (known runs: {', '.join(CONFIGS)})")
    return found


def load_examples(
    config: str | Path, answers: list[dict[str, Any]], *, whole: bool = False
) -> dict[tuple[str, str], Any]:
    """{(dataset, example_id): Example} of the run's questions, as `verirag eval CONFIG` built them:
    the grid's `load_examples` over the config's datasets (loader, path, options, seed), with the
    config's groups file replaced by the run's own question groups and no `n` draw (the run's
    answers are the questions it drew). A config that prunes gives the passages its judges read: each
    retrieved passage cut to the sentences the records' pruner report kept (`pruned_as_recorded`),
    unless `whole`: the passages as retrieved, before pruning, for a judge meant to read everything
    (nli over every passage, whole)."""
    from verirag_lab.experiments.grid.config import load_config
    from verirag_lab.experiments.grid.runner import load_examples as grid_examples

    cfg = load_config(config)
    groups: dict[str, set[str]] = {}
    for a in answers:
        groups.setdefault(a["dataset"], set()).add(a["group"])
    missing = set(groups) - {d.name for d in cfg.datasets}
    if missing:
        raise SystemExit(f"{config} has no dataset {', '.join(sorted(missing))}: is it the run's config?")

    def no_llm(spec: str, n_ctx: int):
        raise SystemExit(f"{config}: a dataset needs the model {spec} to load; not supported here")

    with tempfile.TemporaryDirectory(prefix="verirag-rescore-") as tmp:
        path = Path(tmp) / "groups.txt"
        path.write_text("".join(f"{ds}:{g}\n" for ds in sorted(groups) for g in sorted(groups[ds])), encoding="utf-8")
        datasets = [d.model_copy(update={"groups": str(path), "n": None}) for d in cfg.datasets if d.name in groups]
        examples = grid_examples(replace(cfg, datasets=datasets), no_llm)
    out = {(ds, str(e.id)): e for ds, exs in examples.items() for e in exs}
    if cfg.prune.on and not whole:
        reports = {(a["dataset"], a["example_id"]): a.get("prune") for a in answers}
        # only the examples answered here (a group's other example may be beyond --limit, or not yet run)
        out = {k: pruned_as_recorded(e, reports[k], config) for k, e in out.items() if k in reports}
    return out


def pruned_as_recorded(example, report: dict[str, Any] | None, config: str | Path = "the run"):
    """`example` with the passages its judges read in a pruned run: the report's passages in its order,
    each cut to its kept sentences (the pruner's own split and join), those that kept none left out.
    The report holds no text, so the split is checked against its sentence count."""
    from verirag.learned.pruner import PrunedPassage
    from verirag.learned.pruner_inputs import passage_sentences

    if not report or not isinstance(report.get("passages"), list):
        raise SystemExit(f"{config} prunes the passages, and the records of {example.id} hold no pruner report")
    by_id = {p.id: p for p in example.passages}
    relevance = dict(zip(by_id, example.relevance)) if example.relevance else None
    read = []
    for entry in report["passages"]:
        passage = by_id.get(entry["id"])
        if passage is None:
            raise SystemExit(f"{example.id}: the pruner report names passage {entry['id']!r}, not rebuilt here")
        sentences = passage_sentences(passage.text)
        if len(sentences) != entry.get("n_sentences", len(entry.get("sentences") or [])):
            raise SystemExit(
                f"{example.id}: {entry['id']!r} splits into {len(sentences)} sentences, the run into another count"
            )
        if entry["kept"]:
            text = PrunedPassage(sentences, [0.0] * len(sentences), list(entry["kept"])).text
            read.append(replace(passage, text=text))
    kept_relevance = [relevance[p.id] for p in read] if relevance else example.relevance
    return replace(example, passages=read, relevance=kept_relevance)


class _Fingerprint:
    """What a generator's identity reads of its LLM: the fingerprint the records name (no model loaded)."""

    backend = "none"

    def __init__(self, fingerprint: str, model_id: str):
        self.fingerprint, self.model_id = fingerprint, model_id


def recomputed_generation(answer: dict[str, Any], example) -> str | None:
    """The generation key the run's generator gives `example` (its trace key: the generator's
    identity, its model's fingerprint and the passages read: ids, titles, texts), built over the
    records' model fingerprint without loading the model; equal to the record's `generation`
    exactly when the rebuilt passages are the ones the generator read (and the generator's options
    and prompt are unchanged since the run). None when the generator cannot be rebuilt."""
    from verirag.awf import registry
    from verirag.awf.spec import MethodSpec, split_name
    from verirag.awf.trace import Trace
    from verirag.errors import VeriragError

    try:
        spec = MethodSpec(answer["generator"], answer["generator_options"])
        _, gen, _ = split_name(spec.name)
        llm = _Fingerprint(answer["model_fingerprint"], answer["model"])
        generator = registry.create("generator", gen, llm, **spec.routed().get("generator", {}))
        return generator.quantity_key(Trace(example.question_with_history(), list(example.passages)))
    except (VeriragError, KeyError, TypeError, ValueError):
        return None


class Scorer:
    """A verifier folder as the run's `vanilla+verifier` used it, and what names it."""

    def __init__(self, folder: str | Path, name: str | None = None, softmin: float | None = None):
        from verirag.awf.predictors.verifier import TrainedVerifierPredictor
        from verirag.learned.shipped import shipped_verifier_dir

        self.folder = Path(folder)
        # the shipped folder is the default's verifier: named as the default names it, so its scores
        # carry the identity a stack fitted on the default verifier checks (`verifier_own_answers --stack`)
        shipped = self.folder.resolve() == shipped_verifier_dir().resolve()
        options = {} if shipped else {"verifier": str(self.folder)}
        if softmin is not None:  # the answer rule (default: today's); 0 scores as records made before it
            options["softmin"] = softmin
        self.predictor = TrainedVerifierPredictor(**options)
        self.name = name or self.folder.resolve().name
        model = self.predictor.model
        self.identity = {
            "folder": _shown(self.folder),
            "name": self.name,
            "encoder": getattr(model, "encoder", None),
            "model_fingerprint": self.predictor.model_fingerprint(),
            "predictor_digest": self.predictor.digest,
            "fingerprints": dict(getattr(model, "fingerprints", {}) or {}),
            "adapter_sha256": getattr(model, "adapter_sha256_", None),
            "temperature": getattr(model, "temperature_", None),
        }

    def score(
        self, question: str, answer: str, passages, history=()
    ) -> tuple[float, float, str | None, float | None, list[str]]:
        """(score as a record made today would hold it, verify seconds, error, the score before the
        answer rules, the rules that changed it): the answer core's VerifyGiven and AnswerRules (a
        declined answer scores 0); a score that could not be computed is 0 (the records' rule).
        A follow-up is read in its conversation, as the run read it (`history`: its earlier turns)."""
        from verirag.awf.core import AnswerCore, AnswerRules, AnswerState, PassagesRecord, VerifyGiven

        asked = AnswerState.asked(question, history or None)
        state = AnswerState(question, history=asked.history, answer=answer, passages=PassagesRecord(list(passages)))
        AnswerCore([VerifyGiven(self.predictor, CHECK_METHOD), AnswerRules()], raise_outages=False).run(state)
        j = state.judgement
        score = 0.0 if j.score is None or math.isnan(j.score) else min(1.0, max(0.0, float(j.score)))
        raw = None if j.raw_score is None else min(1.0, max(0.0, float(j.raw_score)))
        return score, float(state.timings.get("verify", 0.0)), j.error, raw, list(j.rules)


def _shown(path: Path) -> str:
    """A path as the header records it: relative to the checkout when inside it."""
    p = path.resolve()
    try:
        return str(p.relative_to(ROOT))
    except ValueError:
        return str(p)


def read_rescored(path: str | Path, *, raw: bool = False) -> dict[str, tuple[float, float]]:
    """{generation key: (score, seconds)} of a file this script wrote (the header line skipped), or of
    benchmarks/nli_evidence.py's rows (`id` is the generation key; a judge that failed scores 0, as a
    failed predictor counts in a stack); `raw`: the verifier's score before the answer rules (a
    declined answer's own score, not 0)."""
    out = {}
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                if not row.get("header"):
                    score = row["raw_score"] if raw and row.get("raw_score") is not None else row["score"]
                    if score is None and not row.get("error"):  # only a failure the row records counts 0
                        raise SystemExit(f"{path}: a row without a score or an error ({row.get('key', row.get('id'))})")
                    out[row.get("key", row.get("id"))] = (float(score or 0.0), float(row["seconds"]))
    return out


def read_header(path: str | Path) -> dict[str, Any] | None:
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                row = json.loads(line)
                return row if row.get("header") else None
    return None


def rescore(
    run: str | Path,
    verifier: str | Path,
    out: str | Path,
    *,
    name: str | None = None,
    config: str | Path | None = None,
    limit: int | None = None,
    progress: bool = True,
    check_method: str = CHECK_METHOD,
    key_check: bool = True,
    softmin: float | None = None,
) -> dict[str, Any]:
    """Score the answers of `run` (the first `limit` of each dataset) with `verifier` into `out`, skipping those
    already there; returns {written, skipped, compared, max_abs_diff, mean_abs_diff, worst}: the
    difference to `check_method`'s committed scores over every answer in `out` (expected ~0 only
    when `verifier` is the one that run used), and what `check_inputs` found of the answers
    scored now."""
    run, out = Path(run), Path(out)
    answers = run_answers(read_records(run), check_method)
    answers.sort(key=lambda a: a["key"])
    if limit is not None:  # the first `limit` answers of each dataset
        rank: dict[str, int] = {}
        kept = []
        for a in answers:
            rank[a["dataset"]] = rank.get(a["dataset"], 0) + 1
            if rank[a["dataset"]] <= limit:
                kept.append(a)
        answers = kept
    scorer = Scorer(verifier, name, softmin)
    done: dict[str, tuple[float, float]] = {}
    header = None
    if out.is_file() and out.stat().st_size:  # resume: the same verifier's rows are kept
        header = read_header(out)
        made_by = (header or {}).get("verifier", {}).get("model_fingerprint")
        if made_by != scorer.identity["model_fingerprint"]:
            raise SystemExit(f"{out} holds scores of another verifier ({made_by}): use another --out")
        done = read_rescored(out)
    todo = [a for a in answers if a["key"] not in done]
    written, checked = 0, {"generation_equal": 0, "generation_unchecked": 0, "inputs_differ": 0}
    if todo:
        examples = load_examples(config_for(run, config), todo)
        checked = check_inputs(todo, examples, strict=key_check)
        out.parent.mkdir(parents=True, exist_ok=True)
        with open(out, "a", encoding="utf-8") as fh, _progress(progress, len(todo)) as advance:
            if header is None:
                header = {
                    "header": True,
                    "run": _shown(run),
                    "config": _shown(config_for(run, config)),
                    "verifier": scorer.identity,
                    "rows": "key (dataset|model|example_id|generation), dataset, example_id, group, score, seconds",
                    "written": time.strftime("%Y-%m-%d"),
                }
                fh.write(json.dumps(header, ensure_ascii=False) + "\n")
            for a in todo:
                ex = examples.get((a["dataset"], a["example_id"]))
                if ex is None:  # only with key_check off: check_inputs named it
                    advance()
                    continue
                score, seconds, error, raw, rules = scorer.score(ex.question, a["answer"], ex.passages, ex.history)
                row = {k: a[k] for k in ("key", "dataset", "example_id", "group")}
                row.update(score=score, seconds=round(seconds, 4))
                if rules:  # e.g. "declined": the answer declines, so nothing is supported
                    row.update(raw_score=raw, rules=rules)
                if error:
                    row["error"] = error
                fh.write(json.dumps(row, ensure_ascii=False) + "\n")
                fh.flush()
                written += 1
                advance()
    return {
        "written": written,
        "skipped": len(answers) - len(todo),
        **checked,
        **compare(answers, read_rescored(out), read_rescored(out, raw=True)),
    }


def check_inputs(answers: list[dict[str, Any]], examples: dict[tuple[str, str], Any], strict: bool = True):
    """That each answer's rebuilt example is the one its generator read: found, with as many passages
    as its record judged, and (`recomputed_generation`) the same generation key. A difference stops
    the run (`strict`) before any score is written."""
    equal, unchecked, wrong = 0, 0, []
    for a in answers:
        ex = examples.get((a["dataset"], a["example_id"]))
        if ex is None:
            wrong.append(f"{a['dataset']} example {a['example_id']}: not found with the config")
            continue
        if a["n_passages"] is not None and a["n_passages"] != len(ex.passages):
            wrong.append(f"{a['key']}: {len(ex.passages)} passages rebuilt, the record judged {a['n_passages']}")
            continue
        key = recomputed_generation(a, ex) if a["generation"] else None
        if key is None:
            unchecked += 1
        elif key == a["generation"]:
            equal += 1
        else:
            wrong.append(f"{a['key']}: the rebuilt passages give the generation key {key}")
    if wrong and strict:
        raise SystemExit(
            f"{len(wrong)} of {len(answers)} answers' inputs differ from the run's (first: {wrong[0]}); is the "
            "config the run's, the data folder the same, the generator's prompt unchanged? (--no-key-check: go on)"
        )
    return {"generation_equal": equal, "generation_unchecked": unchecked, "inputs_differ": len(wrong)}


def compare(
    answers: list[dict[str, Any]], scores: dict[str, tuple[float, float]], raw: dict[str, tuple[float, float]]
) -> dict[str, Any]:
    """The difference of `scores` to the committed scores of the same answers. An answer that an
    answer rule changed today (`raw` differs) whose record names no rule was recorded before the
    rule existed (the declined rule, 2026-11-25): it is compared on its raw score, and counted in
    `before_rules`."""
    diffs, before = [], 0
    for a in answers:
        if a["committed"] is None or a["key"] not in scores:
            continue
        mine = scores[a["key"]][0]
        if raw[a["key"]][0] != mine and not a.get("committed_rules"):
            mine, before = raw[a["key"]][0], before + 1
        diffs.append((abs(mine - a["committed"]), a["key"]))
    if not diffs:
        return {"compared": 0, "max_abs_diff": None, "mean_abs_diff": None, "worst": None, "before_rules": 0}
    worst = max(diffs)
    return {
        "compared": len(diffs),
        "max_abs_diff": worst[0],
        "mean_abs_diff": sum(d for d, _ in diffs) / len(diffs),
        "worst": worst[1],
        "before_rules": before,
    }


class _progress:
    """A rich progress bar over answers (nothing when disabled); yields advance()."""

    def __init__(self, enabled: bool, total: int):
        self.enabled, self.total = enabled, total

    def __enter__(self) -> Callable[[], None]:
        if not self.enabled:
            return lambda: None
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeRemainingColumn

        self.p = Progress(TextColumn("[bold]rescore"), BarColumn(), MofNCompleteColumn(), TimeRemainingColumn())
        self.p.__enter__()
        task = self.p.add_task("answers", total=self.total)
        return lambda: self.p.advance(task)

    def __exit__(self, *exc) -> bool:
        if self.enabled:
            self.p.__exit__(*exc)
        return False


def _threads() -> None:
    """VERIRAG_THREADS also bounds torch's threads here (the verifier's encoder runs in torch)."""
    n = os.environ.get("VERIRAG_THREADS")
    if n and n.isdigit() and int(n) > 0:
        import torch

        torch.set_num_threads(int(n))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("run", type=Path, help="an eval run folder (or its results.jsonl)")
    ap.add_argument("--verifier", required=True, type=Path, help="a verifier folder (verirag train verifier --out)")
    ap.add_argument("--out", required=True, type=Path, help="the JSONL to write (rows already there are kept)")
    ap.add_argument("--name", default=None, help="the verifier's name in the header (default: its folder's name)")
    ap.add_argument("--config", default=None, help="the run's config (default: by the run folder's name)")
    ap.add_argument("--limit", type=int, default=None, help="only the first N answers of each dataset (by key)")
    ap.add_argument("--no-progress", action="store_true")
    ap.add_argument(
        "--softmin",
        type=float,
        default=None,
        help="the answer rule's temperature (default: the verifier's default; 0: the plain minimum of runs made before it)",
    )
    ap.add_argument(
        "--no-key-check", action="store_true", help="score even when rebuilt inputs give other generation keys"
    )
    args = ap.parse_args(argv)
    _threads()
    res = rescore(
        args.run,
        args.verifier,
        args.out,
        name=args.name,
        config=args.config,
        limit=args.limit,
        progress=not args.no_progress,
        key_check=not args.no_key_check,
        softmin=args.softmin,
    )
    print(f"{res['written']} answers scored, {res['skipped']} already in {args.out}")
    if res["written"]:
        print(
            f"inputs: {res['generation_equal']} of {res['written']} rebuilt examples give the record's generation "
            f"key (passages ids, titles, texts), {res['generation_unchecked']} not checked, {res['inputs_differ']} differ"
        )
    if res["compared"]:
        print(
            f"against the committed {CHECK_METHOD} scores of {res['compared']} answers (~0 only for the verifier "
            f"that made them): max |diff| "
            f"{res['max_abs_diff']:.2e} ({res['worst']}), mean {res['mean_abs_diff']:.2e}"
        )
    if res.get("before_rules"):
        print(
            f"{res['before_rules']} answers an answer rule scores 0 today (e.g. declined) were recorded before "
            "the rule: compared on the verifier's raw score (the row's raw_score)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
