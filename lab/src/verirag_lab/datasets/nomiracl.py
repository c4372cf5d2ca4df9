"""`nomiracl`: NoMIRACL English test (project-miracl/nomiracl), answerability by construction.

Each query comes with 10 passages; in the `relevant` subset at least one passage answers it
(answerable True), in `non_relevant` none does (answerable False, relevance all 0). Which of a
relevant query's passages answers it is not in the files, so its relevance stays None.

The released files hold the passages only inside the prompt sent to each model:

    ...QUESTION:\\n<query>\\n\\nCONTEXTS:\\n[1] <title>: <text>\\n\\n[2] ...\\n\\nOUTPUT:\\n

`parse_prompt` takes them out; the title is what precedes the first ": " of a passage, which is
wrong for the few titles that contain ": " themselves (the rest of the title stays in the text).

NoMIRACL has no reference answers. Given `references_llm` (an `LLM`; wrap it in the request cache
so a rerun pays nothing), each relevant query gets a short reference generated from its passages
with the prompt `nomiracl_reference`; the raw reply is kept in meta["reference_raw"].
"""

from __future__ import annotations

import logging
import re
from pathlib import Path
from typing import Any

from verirag.errors import InputError, VeriragError
from verirag.prompts import load_prompt
from verirag.types import Example, Passage

from ._io import iter_jsonl, require
from ._sampling import subsample

SUBSETS = ("relevant", "non_relevant")
_QUESTION_MARK = "QUESTION:\n"
_CONTEXTS_MARK = "\n\nCONTEXTS:\n"
_OUTPUT_MARK = "\n\nOUTPUT:"
REFERENCE_MAX_TOKENS = 32

log = logging.getLogger(__name__)


def parse_prompt(prompt: str, n_passages: int, where: str) -> tuple[str, list[tuple[str, str]]]:
    """(query, [(title, text), ...]) from a NoMIRACL vanilla prompt with `n_passages` passages.

    Passages are numbered [1]..[n]; the text of [i] runs up to "\\n\\n[i+1] " (or to the OUTPUT
    marker for the last), so brackets inside a passage do not cut it.
    """
    try:
        head, rest = prompt.split(_CONTEXTS_MARK, 1)
        query = head.split(_QUESTION_MARK, 1)[1].strip()
        contexts = rest.rsplit(_OUTPUT_MARK, 1)[0] if _OUTPUT_MARK in rest else rest
    except (IndexError, ValueError):
        raise InputError(f"{where}: prompt lacks the QUESTION: / CONTEXTS: sections") from None
    passages = []
    start = 0
    for i in range(1, n_passages + 1):
        label = f"[{i}] "
        if not contexts.startswith(label, start):
            raise InputError(f"{where}: passage [{i}] not found where expected in the prompt")
        body_start = start + len(label)
        nxt = contexts.find(f"\n\n[{i + 1}] ", body_start) if i < n_passages else -1
        body = contexts[body_start:] if nxt < 0 else contexts[body_start:nxt]
        if i < n_passages and nxt < 0:
            raise InputError(f"{where}: the prompt holds fewer than {n_passages} passages")
        title, sep, text = body.partition(": ")
        passages.append((title.strip(), text.strip()) if sep else ("", body.strip()))
        start = nxt + 2 if nxt >= 0 else len(contexts)
    if not query:
        raise InputError(f"{where}: empty query")
    return query, passages


def subset_file(folder: Path, subset: str) -> Path:
    files = sorted((folder / subset).glob("*.jsonl")) if (folder / subset).is_dir() else []
    if not files:
        raise InputError(
            f"no NoMIRACL {subset} file: expected {folder / subset}/*.jsonl (e.g. en.test.vanilla_prompt.jsonl)"
        )
    return files[0]


def read_subset(folder: Path, subset: str) -> list[Example]:
    path = subset_file(folder, subset)
    examples = []
    for lineno, rec in iter_jsonl(path):
        where = f"{path}, line {lineno}"
        docids = require(rec, "docids", where)
        query, parsed = parse_prompt(str(require(rec, "prompt", where)), len(docids), where)
        passages = [
            Passage(id=str(d), text=text, title=title, source="nomiracl") for d, (title, text) in zip(docids, parsed)
        ]
        relevant = subset == "relevant"
        examples.append(
            Example(
                id=str(require(rec, "query_id", where)),
                question=query,
                passages=passages,
                relevance=[None] * len(passages) if relevant else [0] * len(passages),
                answerable=relevant,
                dataset="nomiracl",
                group=str(rec["query_id"]),
                meta={"subset": subset},
            )
        )
    return examples


def clean_reference(text: str, no_answer: list[str]) -> str:
    """The first line of a reply without a label, wrapping quotes or a final full stop (kept in
    abbreviations such as "U.S."); "" when the reply says there is no answer."""
    line = next((s for s in text.strip().splitlines() if s.strip()), "").strip()
    line = re.sub(r"^(short answer|answer)\s*:\s*", "", line, flags=re.IGNORECASE)
    line = line.strip().strip("\"'`*").strip()
    if line.endswith(".") and line.count(".") == 1:
        line = line[:-1].rstrip()
    return "" if line.lower() in {x.lower().rstrip(".") for x in no_answer} else line


def add_references(examples: list[Example], llm: Any) -> None:
    """Generate a reference for each answerable example, in place (see the module docstring).

    A request the LLM fails (`VeriragError`, e.g. a prompt longer than its context window)
    leaves that example without references and with meta["reference_error"]; others go on.
    """
    if not callable(getattr(llm, "generate", None)):
        raise InputError(f"references_llm must be a verirag LLM, got {type(llm).__name__}")
    template = load_prompt("nomiracl_reference")
    no_answer = list(template.extra.get("no_answer", []))
    for ex in examples:
        if not ex.answerable:
            continue
        passages = "\n\n".join(
            f"[{i}] {p.title}\n{p.text}" if p.title else f"[{i}] {p.text}" for i, p in enumerate(ex.passages, start=1)
        )
        try:
            gen = llm.generate(
                template.messages(question=ex.question, passages=passages),
                max_tokens=REFERENCE_MAX_TOKENS,
                temperature=0.0,
            )
        except VeriragError as e:  # one failed request leaves one example without a reference
            log.warning("no reference for NoMIRACL query %s: %s", ex.id, e)
            ex.references = []
            ex.meta["reference_error"] = f"{type(e).__name__}: {e}"
            continue
        ex.meta["reference_raw"] = gen.text
        if gen.finish_reason == "error":
            ex.references = []
            ex.meta["reference_error"] = "the LLM returned an error"
            continue
        reference = clean_reference(gen.text, no_answer)
        ex.references = [reference] if reference else []
        ex.meta["reference_model"] = getattr(llm, "model_id", "")


def load_nomiracl(
    path: str | Path, *, n: int | None = None, seed: int = 0, subset: str = "both", references_llm: Any = None
) -> list[Example]:
    """NoMIRACL queries from `path` (the folder holding relevant/ and non_relevant/).

    Options: subset "both" | "relevant" | "non_relevant"; references_llm: an LLM that writes a
    reference answer for each relevant query (only for the `n` sampled ones).
    """
    if subset not in ("both", *SUBSETS):
        raise InputError(f"unknown NoMIRACL subset {subset!r}; choose both, relevant or non_relevant")
    folder = Path(path).expanduser()
    if not folder.is_dir():
        raise InputError(
            f"NoMIRACL folder not found at {folder}: pass the folder that holds relevant/ and non_relevant/"
        )
    chosen = SUBSETS if subset == "both" else (subset,)
    examples = subsample([ex for s in chosen for ex in read_subset(folder, s)], n, seed)
    if references_llm is not None:
        add_references(examples, references_llm)
    return examples
