"""`hotpotqa`: the AwF benchmark built from HotpotQA as the AwF paper builds BioASQ.

Each question appears twice (see `hotpotqa_original.twin_examples`): with distractor paragraphs
only (answerable False) and with one distractor replaced by a gold paragraph (answerable True),
both in `group` = the question id. `n` samples questions, so n gives 2n examples.

`path` is a HotpotQA file (JSON array or JSON lines) or a folder whose *.json / *.jsonl files are
all read, in name order: by default $VERIRAG_DATA_DIR/hotpotqa_amor_subset (dev.json: 100
distractor-setting questions; test.json: 500 questions whose context paragraphs were retrieved,
so for some of them no gold paragraph text is in the file and they are skipped).
"""

from __future__ import annotations

from pathlib import Path

from verirag.errors import InputError
from verirag.types import Example, Passage

from .followup import followups
from .hotpotqa_original import HotpotRecord, build_examples, check_n_passages, passage_id, read_hotpotqa, texts_by_title


def hotpotqa_files(path: str | Path) -> list[Path]:
    """The HotpotQA files at `path`: the file itself, or the JSON files of a folder."""
    p = Path(path).expanduser()
    if p.is_dir():
        files = sorted(
            f for f in p.iterdir() if f.is_file() and f.name.endswith((".json", ".jsonl", ".json.gz", ".jsonl.gz"))
        )
        if not files:
            raise InputError(f"no HotpotQA .json or .jsonl file in folder {p}")
        return files
    if not p.is_file():
        raise InputError(f"HotpotQA data not found at {p}: pass a HotpotQA file or a folder of them")
    return [p]


def read_hotpotqa_path(path: str | Path) -> list[HotpotRecord]:
    """Records of every HotpotQA file at `path`; a question id seen twice is kept once."""
    seen: set[str] = set()
    records = []
    for f in hotpotqa_files(path):
        for r in read_hotpotqa(f):
            if r.id not in seen:
                seen.add(r.id)
                records.append(r)
    return records


def load_hotpotqa(
    path: str | Path, *, n: int | None = None, seed: int = 0, n_passages: int | None = None, followup: bool = False
) -> list[Example]:
    """Twin (unanswerable, answerable) examples of every usable question at `path`.

    n_passages: keep the first n_passages distractors per question (default: all, typically 8);
    followup: ask each question as a follow-up about the first supporting paragraph's entity it names
    (`verirag_lab.datasets.followup`; both twins alike), leaving out the questions that name none.
    """
    check_n_passages(n_passages)
    records = read_hotpotqa_path(path)
    examples = build_examples(records, dataset="hotpotqa", mode="twins", n=n, seed=seed, n_passages=n_passages)
    if followup:
        texts, by_id = texts_by_title(records), {r.id: r for r in records}

        def entities(ex: Example) -> list[Passage]:
            titles = by_id[ex.group].gold_titles
            return [
                Passage(id=passage_id(t), text=texts[t], title=t, source="hotpotqa") for t in titles if texts.get(t)
            ]

        examples = followups(examples, entities, "hotpotqa", seed)
    return examples
