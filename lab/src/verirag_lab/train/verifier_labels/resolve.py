"""Labels file -> `VerifierExample`s: the benchmark text read back from the data folder by id.

Each passage becomes "title\\ntext" (the text alone when it has no title), after the record's
`passage_edits`; a record's own `question` and `history` (text specs) are rendered too. A docs
record's file is checked against its fingerprint. A record whose
question text changed since it was made (its `qh`), whose passage or answer id is gone, whose
sentence labels do not fit the answer's sentences, or whose question is now an instruct_qa_human
question is refused with an `InputError`: training on a silently different example is worse
than not training. Skip records (`skip`) give no example.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from verirag.errors import InputError
from verirag.retrieval.sentences import sentence_spans
from verirag.types import Passage
from verirag_lab.datasets import data_dir
from verirag_lab.train.verifier_examples import VerifierExample
from verirag_lab.train.verifier_labels.context import LabelContext
from verirag_lab.train.verifier_labels.exclusion import evaluation_questions, question_key
from verirag_lab.train.verifier_labels.records import is_example, read_records, render
from verirag_lab.train.verifier_labels.sources import load_sources, question_hash


def passage_text(p: Passage) -> str:
    return f"{p.title}\n{p.text}" if p.title else p.text


def edited(passages: list[Passage], r: dict[str, Any], lookup) -> list[Passage]:
    """`passages` with the record's `passage_edits` applied (each passage's from its end back)."""
    edits = r.get("passage_edits") or []
    out = list(passages)
    for index in sorted({int(e[0]) for e in edits}):
        p = out[index]
        text = p.text
        for _, offset, length, spec in sorted((e for e in edits if int(e[0]) == index), key=lambda e: -int(e[1])):
            if offset < 0 or offset + length > len(text):
                raise InputError(f"a passage edit at {offset}+{length} falls outside passage {index}")
            text = text[:offset] + render(spec, lookup) + text[offset + length :]
        out[index] = Passage(id=p.id, text=text, title=p.title, source=p.source)
    return out


def check_doc(source, doc: dict[str, Any]) -> None:
    """InputError when the documentation file a record was made from changed (another version)."""
    from verirag_lab.train.verifier_labels.doc_corpus import file_sha

    sha = file_sha(source, doc["package"], doc["path"])
    if sha != doc.get("sha"):
        raise InputError(
            f"{doc['package']}:{doc['path']} changed since it was labelled (made from version "
            f"{doc.get('version')}, sha {doc.get('sha')}; installed: sha {sha}): run scripts/install_doc_corpus.sh "
            "for that version or label again"
        )


def judge_score(r: dict[str, Any]) -> float | None:
    """The LLM judge's score of a record's answer (the distill recipe's nli over the evidence, which
    every answer has; the full-passage judge is a sample, kept to measure it), or None."""
    score = ((r.get("meta") or {}).get("judge") or {}).get("evidence")
    return None if score is None else float(score)


def resolve(records: Iterable[dict[str, Any]], data_root: str | Path | None = None) -> list[VerifierExample]:
    """The examples of `records` (skips left out), in order; see the module doc."""
    examples_records = [r for r in records if is_example(r)]
    root = data_dir(data_root)
    ctx = LabelContext(load_sources(root, sorted({r["dataset"] for r in examples_records})) if examples_records else {})
    evaluation = evaluation_questions(root) if examples_records else set()
    out = []
    for r in examples_records:
        try:
            q = ctx.sources[r["dataset"]].question(str(r["example"]))
            if question_hash(q.text) != r.get("qh"):
                raise InputError("its question's text changed since it was labelled")
            if question_key(q.text) in evaluation:
                raise InputError("its question is an instruct_qa_human (evaluation) question")
            if "doc" in r:
                check_doc(ctx.sources[r["dataset"]], r["doc"])
            answer = render(r["answer"], ctx)
            question = render(r["question"], ctx) if "question" in r else q.text
            history = tuple(render(t, ctx) for t in r.get("history", ()))
            passages = tuple(passage_text(p) for p in edited(ctx.passages(q, [str(k) for k in r["passages"]]), r, ctx))
            sentence_labels = r.get("sentence_labels")
            if sentence_labels is not None and len(sentence_labels) != len(sentence_spans(answer)):
                raise InputError(f"{len(sentence_labels)} sentence labels for {len(sentence_spans(answer))} sentences")
        except (InputError, KeyError, TypeError) as e:
            raise InputError(f"labels record {r.get('id')!r}: {e}") from e
        out.append(
            VerifierExample(
                question=question,
                answer=answer,
                passages=passages,
                label=int(r["label"]),
                recipe=str(r["recipe"]),
                group=q.group,
                sentence_labels=tuple(sentence_labels) if sentence_labels is not None else None,
                source=str(r["id"]),
                history=history,
                judge=judge_score(r),
            )
        )
    return out


def resolve_file(path: str | Path, data_root: str | Path | None = None) -> list[VerifierExample]:
    """`resolve` of a labels file's records."""
    return resolve(read_records(path), data_root)
