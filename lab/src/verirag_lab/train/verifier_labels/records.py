"""The labels file: one compact JSON line per labelled example, never any benchmark text.

A record (fields left out when empty):

    id               "<recipe>/<dataset>/<example>/<variant>/s<seed>": the same command makes the same ids
    recipe           real | swap | evidence_removal | local_edit | evidence_sentence | ... | distill
    dataset, example the question, read from the data folder by id (`sources`)
    qh               8 hex digits of the question text: `resolve` refuses a record whose question changed
    passages         the passage keys the answer is judged against, in the order given
    answer           a text spec (below)
    label            1 supported, 0 unsupported
    sentence_labels  per sentence of the answer (`sentences.split_sentences`), where known
    model, fingerprint, prompt, temperature, seed    how an LLM made the answer (when one did)
    meta             what the recipe knew: condition, style, correct, evidence, kind, ...
    v                the recipe's VERSION that made it

or, for an item that gives no example (no distractor left, an answer too short to edit, ...):
{id, recipe, dataset, example, skip: reason, v}. Skips are lines too, so a rerun recomputes nothing.

A text spec is literal text (what an LLM wrote, or a value made up here such as a moved year),
{"answer_from": [dataset, example, i]} (the i-th gold answer), {"passage_span": [dataset, key,
offset, length]} (characters of a passage's text), {"question_of": [dataset, example]} (a
question's text), {"title_of": [dataset, key]} (a passage's title without a trailing
"(disambiguation)"), {"join": [spec, ...]} (the texts concatenated), or {"edit": spec, "offset":
o, "length": n, "replacement": spec} (spec's text with n characters at o replaced). Offsets count
characters (Python str indices).

Optional fields of the newer recipes (issue 36): `question` (a text spec: the question asked, when
it is not the dataset's own, e.g. a follow-up rewritten with a pronoun, or a cloze), `history`
(text specs: the earlier turns, oldest first, "User: ..." / "Agent: ..."), `passage_edits`
([[passage index, offset, length, spec], ...]: a passage's text edited, e.g. a bridge entity
swapped) and `doc` (the documentation file a docs record was made from: package, version, path,
sha256 prefix, checked when the record is read back).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Protocol

from verirag.errors import InputError
from verirag.jsonio import AppendedJsonl
from verirag.types import Passage
from verirag_lab.datasets.followup import bare_title
from verirag_lab.train.verifier_labels.sources import Question, question_hash

SUPPORTED, UNSUPPORTED = 1, 0


class Lookup(Protocol):
    def answers(self, dataset: str, example: str) -> tuple[str, ...]: ...
    def passage(self, dataset: str, key: str) -> Passage: ...
    def question_text(self, dataset: str, example: str) -> str: ...


def render(spec: Any, lookup: Lookup) -> str:
    """The text a spec stands for (module doc); `InputError` for a malformed or stale spec."""
    if isinstance(spec, str):
        return spec
    if not isinstance(spec, dict):
        raise InputError(f"malformed answer spec {spec!r:.80}")
    try:
        if "answer_from" in spec:
            dataset, example, i = spec["answer_from"]
            return lookup.answers(dataset, str(example))[int(i)]
        if "question_of" in spec:
            dataset, example = spec["question_of"]
            return lookup.question_text(dataset, str(example))
        if "title_of" in spec:
            dataset, key = spec["title_of"]
            return bare_title(lookup.passage(dataset, str(key)).title)
        if "join" in spec:
            return "".join(render(part, lookup) for part in spec["join"])
        if "passage_span" in spec:
            dataset, key, offset, length = spec["passage_span"]
            text = lookup.passage(dataset, str(key)).text
            if offset < 0 or offset + length > len(text):
                raise InputError(f"passage {dataset}:{key} is shorter than the span {offset}+{length}")
            return text[offset : offset + length]
        if "edit" in spec:
            base = render(spec["edit"], lookup)
            offset, length = int(spec["offset"]), int(spec["length"])
            if offset < 0 or offset + length > len(base):
                raise InputError(f"an edit at {offset}+{length} falls outside its {len(base)}-character base")
            return base[:offset] + render(spec["replacement"], lookup) + base[offset + length :]
    except (KeyError, TypeError, ValueError, IndexError) as e:
        raise InputError(f"malformed answer spec {spec!r:.80} ({type(e).__name__}: {e})") from e
    raise InputError(f"malformed answer spec {spec!r:.80}")


def record_id(recipe: str, dataset: str, example: str, variant: str, seed: int) -> str:
    return f"{recipe}/{dataset}/{example}/{variant}/s{seed}"


def labelled(
    item_id: str,
    recipe: str,
    dataset: str,
    example: str,
    qh: str,
    passages: list[str],
    answer: Any,
    label: int,
    *,
    sentence_labels: list[int] | None = None,
    generation: dict[str, Any] | None = None,
    meta: dict[str, Any] | None = None,
    extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A labelled record; `generation` holds model, fingerprint, prompt, temperature, seed;
    `extra` the optional fields of the module doc (question, history, passage_edits, doc)."""
    rec: dict[str, Any] = {
        "id": item_id,
        "recipe": recipe,
        "dataset": dataset,
        "example": example,
        "qh": qh,
        "passages": list(passages),
        "answer": answer,
        "label": int(label),
    }
    if sentence_labels is not None:
        rec["sentence_labels"] = [int(x) for x in sentence_labels]
    rec.update(generation or {})
    rec.update({k: v for k, v in (extra or {}).items() if v is not None})
    if meta:
        rec["meta"] = meta
    return rec


def skipped(item_id: str, recipe: str, dataset: str, example: str, reason: str) -> dict[str, Any]:
    return {"id": item_id, "recipe": recipe, "dataset": dataset, "example": example, "skip": reason}


# A recipe's items each label one question: these name it once (its dataset, id and hash).
def question_labelled(
    item_id: str, recipe: str, q: Question, passages: list[str], answer: Any, label: int, **fields: Any
) -> dict[str, Any]:
    """`labelled` for an item of question `q`; `fields` as labelled's keyword arguments."""
    return labelled(item_id, recipe, q.dataset, q.id, question_hash(q.text), passages, answer, label, **fields)


def question_skipped(item_id: str, recipe: str, q: Question, reason: str) -> dict[str, Any]:
    return skipped(item_id, recipe, q.dataset, q.id, reason)


def is_example(record: dict[str, Any]) -> bool:
    return "skip" not in record and record.get("label") in (SUPPORTED, UNSUPPORTED)


def label_file(path: str | Path) -> AppendedJsonl:
    """The labels JSONL, keyed by record id, written compactly."""
    return AppendedJsonl(path, "id", compact=True)


def read_records(path: str | Path) -> list[dict[str, Any]]:
    """The records of a labels file, in file order (of two lines with one id, the later)."""
    p = Path(path)
    if not p.is_file():
        raise InputError(f"labels file not found: {p}")
    return list(label_file(p).load().values())
