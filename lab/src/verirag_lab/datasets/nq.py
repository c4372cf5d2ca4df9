"""`nq`: NQ-open questions with top-k passages retrieved from a mixed pool, as in the AwF paper.

The questions and their gold passages come from the "lost in the middle" NQ-open oracle file
(nq-open-oracle.jsonl.gz: question, answers, ctxs[0] = the gold Wikipedia passage). The pool is
every oracle gold passage plus every HotpotQA paragraph (deduplicated by title), so a question's
top-k sometimes holds its gold passage, sometimes another passage that happens to contain the
answer, and sometimes nothing useful: answerability varies the way it does with a real retriever.

Labels: relevance[i] = passage i contains a reference answer (normalised substring, see
`_retrieved`); answerable = any passage is relevant. meta["gold_retrieved"] says whether the
question's own oracle passage is in its top-k.

Cost: BM25 over the ~8.5k-passage pool builds in about 1.5 s. A dense index embeds every pool
passage (minutes on a laptop CPU), so it is saved under the verirag cache directory
(`verirag.models.cache_dir()/datasets/`), keyed by a hash of the pool and the embedder name,
and later calls load it in a second.
"""

from __future__ import annotations

import hashlib
import logging
import os
import shutil
import uuid
from pathlib import Path
from typing import Any

from verirag.errors import InputError
from verirag.models.cache_dir import cache_dir
from verirag.types import Example, Passage

from ._io import iter_jsonl, string_list
from ._retrieved import attach_retrieved, check_k
from ._sampling import subsample
from .followup import followups
from .hotpotqa import read_hotpotqa_path

log = logging.getLogger(__name__)

RETRIEVERS = ("bm25", "dense")
ORACLE_FILE = "nq-open-oracle.jsonl.gz"
ORACLE_FOLDER = "lost_in_the_middle_nq"
DISTRACTOR_FOLDER = "hotpotqa_amor_subset"


def find_oracle_file(path: str | Path) -> Path:
    """The oracle file itself, or the one inside a folder (the shared data folder or its
    lost_in_the_middle_nq/ subfolder)."""
    p = Path(path).expanduser()
    if p.is_file():
        return p
    for candidate in (p / ORACLE_FILE, p / ORACLE_FOLDER / ORACLE_FILE):
        if candidate.is_file():
            return candidate
    raise InputError(
        f"NQ oracle file not found at {p}: pass the path of {ORACLE_FILE} "
        f"(from nelson-liu/lost-in-the-middle) or a folder that holds it"
    )


def find_distractors(oracle_file: Path, distractors: Any) -> Path | None:
    """Where the HotpotQA paragraphs for the pool are: "auto" looks for the shared data layout
    (<data>/lost_in_the_middle_nq/<file> beside <data>/hotpotqa_amor_subset/); None means none."""
    if distractors is None:
        return None
    if distractors != "auto":
        return Path(distractors).expanduser()
    for folder in (oracle_file.parent, oracle_file.parent.parent):
        if (folder / DISTRACTOR_FOLDER).is_dir():
            return folder / DISTRACTOR_FOLDER
    raise InputError(
        f"no {DISTRACTOR_FOLDER}/ folder found beside {oracle_file.parent}: pass "
        f"distractors=<HotpotQA file or folder>, or distractors=None for a pool of "
        f"oracle passages only"
    )


def read_oracle(path: Path) -> list[dict[str, Any]]:
    """Rows {row, question, answers, gold: (title, text)} of the oracle file."""
    rows = []
    for lineno, rec in iter_jsonl(path):
        where = f"{path}, line {lineno}"
        try:
            question, ctx = rec["question"], rec["ctxs"][0]
            gold = (str(ctx.get("title") or ""), str(ctx["text"]))
        except (KeyError, IndexError, TypeError, AttributeError) as e:
            raise InputError(
                f"{where}: expected question, answers and ctxs[0] with a text ({type(e).__name__}: {e})"
            ) from e
        answers = string_list(rec.get("answers"), f"{where}, answers")
        rows.append({"row": len(rows), "question": question, "answers": answers, "gold": gold})
    if not rows:
        raise InputError(f"{path} holds no questions")
    return rows


def build_pool(rows: list[dict[str, Any]], distractor_path: Path | None) -> tuple[list[Passage], list[str]]:
    """(pool, gold passage id of each row). Identical gold passages are kept once."""
    pool: list[Passage] = []
    id_of: dict[tuple[str, str], str] = {}
    gold_ids = []
    for r in rows:
        key = r["gold"]
        if key not in id_of:
            id_of[key] = f"nq-oracle:{r['row']}"
            pool.append(Passage(id=id_of[key], text=key[1], title=key[0], source="nq-oracle"))
        gold_ids.append(id_of[key])
    if distractor_path is not None:
        titles: set[str] = set()
        for rec in read_hotpotqa_path(distractor_path):
            for title, text in rec.paragraphs:
                if text and title not in titles:
                    titles.add(title)
                    pool.append(Passage(id=f"hotpotqa:{title}", text=text, title=title, source="hotpotqa"))
    return pool, gold_ids


def pool_hash(pool: list[Passage]) -> str:
    h = hashlib.sha256()
    for p in pool:
        for part in (p.id, p.title, p.text):
            h.update(part.encode("utf-8"))
            h.update(b"\x00")
    return h.hexdigest()


def dense_retriever(pool: list[Passage], embedder: Any = None, cache: bool = True):
    """A DenseRetriever over `pool`, loaded from the cache when this pool was embedded before."""
    from verirag.retrieval import DenseRetriever, Embedder

    emb = embedder if embedder is not None and not isinstance(embedder, str) else Embedder.load(embedder)
    if not cache:
        return DenseRetriever.build(pool, emb)
    key = hashlib.sha256(f"{emb.name}\x00{pool_hash(pool)}".encode()).hexdigest()[:20]
    folder = cache_dir() / "datasets" / f"dense-pool-{key}"
    if folder.is_dir():
        try:
            return DenseRetriever.load(folder, pool, emb)
        except InputError as e:
            log.warning("rebuilding the cached dense index at %s: %s", folder, e)
    log.info("embedding %d pool passages with %s (cached in %s afterwards)", len(pool), emb.name, folder)
    retriever = DenseRetriever.build(pool, emb)
    # Written beside the target and renamed into place, so a reader never sees half an index.
    tmp = folder.parent / f".{folder.name}.tmp-{uuid.uuid4().hex[:8]}"
    try:
        retriever.save(tmp)
        shutil.rmtree(folder, ignore_errors=True)
        os.replace(tmp, folder)
    except OSError as e:  # a read-only cache costs time, not correctness
        log.warning("could not cache the dense index in %s: %s", folder, e)
        shutil.rmtree(tmp, ignore_errors=True)
    return retriever


def build_retriever(pool: list[Passage], retriever: str, embedder: Any = None, cache: bool = True):
    if retriever == "bm25":
        from verirag.retrieval import BM25Retriever

        return BM25Retriever.build(pool)
    return dense_retriever(pool, embedder, cache)


def load_nq(
    path: str | Path,
    *,
    n: int | None = None,
    seed: int = 0,
    k: int = 5,
    retriever: str = "bm25",
    distractors: Any = "auto",
    embedder: Any = None,
    cache_index: bool = True,
    followup: bool = False,
) -> list[Example]:
    """NQ-open oracle questions with their top-k passages from the oracle + HotpotQA pool.

    Options: k (passages per question); retriever "bm25" | "dense"; distractors: HotpotQA file
    or folder added to the pool ("auto": the shared data layout; None: oracle passages only);
    embedder (dense): a name or an Embedder (default MiniLM); cache_index (dense): keep the
    embedded pool in the cache directory; followup: ask each question as a follow-up about its gold
    passage's entity (`verirag_lab.datasets.followup`; the passages are retrieved for the question as
    first asked), leaving out the questions that do not name it.
    """
    k = check_k(k)
    if retriever not in RETRIEVERS:
        raise InputError(f"unknown retriever {retriever!r} for nq; choose one of {', '.join(RETRIEVERS)}")
    oracle = find_oracle_file(path)
    distractor_path = find_distractors(oracle, distractors)
    rows = read_oracle(oracle)
    pool, gold_ids = build_pool(rows, distractor_path)
    picked = subsample(rows, n, seed)
    examples = [
        Example(
            id=str(r["row"]),
            question=r["question"],
            references=list(r["answers"]),
            dataset="nq",
            group=str(r["row"]),
            meta={"gold_passage_id": gold_ids[r["row"]], "retriever": retriever, "pool_size": len(pool)},
        )
        for r in picked
    ]
    attach_retrieved(examples, build_retriever(pool, retriever, embedder, cache_index), k)
    for ex in examples:
        ex.meta["gold_retrieved"] = ex.meta["gold_passage_id"] in {p.id for p in ex.passages}
    if followup:
        by_id = {p.id: p for p in pool}
        examples = followups(examples, lambda ex: [by_id[ex.meta["gold_passage_id"]]], "nq", seed)
    return examples
