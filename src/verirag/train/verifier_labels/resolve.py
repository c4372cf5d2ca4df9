"""Labels file -> `VerifierExample`s: the benchmark text read back from the data folder by id.

Each passage becomes "title\\ntext" (the text alone when it has no title). A record whose
question text changed since it was made (its `qh`), whose passage or answer id is gone, whose
sentence labels do not fit the answer's sentences, or whose question is now an instruct_qa_human
question is refused with an `InputError`: training on a silently different example is worse
than not training. Skip records (`skip`) give no example.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from verirag.datasets import data_dir
from verirag.errors import InputError
from verirag.retrieval.sentences import sentence_spans
from verirag.train.verifier_examples import VerifierExample
from verirag.train.verifier_labels.context import LabelContext
from verirag.train.verifier_labels.exclusion import evaluation_questions, question_key
from verirag.train.verifier_labels.records import is_example, read_records, render
from verirag.train.verifier_labels.sources import load_sources, question_hash
from verirag.types import Passage


def passage_text(p: Passage) -> str:
    return f"{p.title}\n{p.text}" if p.title else p.text


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
            answer = render(r["answer"], ctx)
            passages = tuple(passage_text(p) for p in ctx.passages(q, [str(k) for k in r["passages"]]))
            sentence_labels = r.get("sentence_labels")
            if sentence_labels is not None and len(sentence_labels) != len(sentence_spans(answer)):
                raise InputError(f"{len(sentence_labels)} sentence labels for {len(sentence_spans(answer))} sentences")
        except (InputError, KeyError, TypeError) as e:
            raise InputError(f"labels record {r.get('id')!r}: {e}") from e
        out.append(
            VerifierExample(
                question=q.text,
                answer=answer,
                passages=passages,
                label=int(r["label"]),
                recipe=str(r["recipe"]),
                group=q.group,
                sentence_labels=tuple(sentence_labels) if sentence_labels is not None else None,
                source=str(r["id"]),
            )
        )
    return out


def resolve_file(path: str | Path, data_root: str | Path | None = None) -> list[VerifierExample]:
    """`resolve` of a labels file's records."""
    return resolve(read_records(path), data_root)
