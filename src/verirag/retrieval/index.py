"""`Index`: the user-facing search index — chunk, build, search, save, load.

On disk an index is a folder:

    meta.json        format name and version, kind, embedder, chunking parameters, counts
    passages.jsonl   the indexed (chunked) passages, one JSON object per line, in index order
    bm25/            BM25Retriever files   (kinds "bm25" and "hybrid")
    dense/           DenseRetriever files  (kinds "dense" and "hybrid")

Saving writes a complete copy into a temporary folder beside the target and then renames it
into place, so an interrupted save never leaves a half-written index where a good one was.
(A process killed outright mid-save leaves a hidden ``.<name>.tmp-*`` folder beside the
target; it is safe to delete.)
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..types import Example, Passage, ScoredPassage
from . import chunking
from .base import check_k, corrupt_index_file, read_index_json, rebuild_hint
from .bm25 import BM25Retriever
from .dense import DenseRetriever
from .embedder import Embedder
from .hybrid import HybridRetriever

FORMAT = "verirag-index"
FORMAT_VERSION = 1
KINDS = ("hybrid", "bm25", "dense")

_META = "meta.json"
_PASSAGES = "passages.jsonl"

Retriever = BM25Retriever | DenseRetriever | HybridRetriever


class Index:
    """A searchable collection of passages.

    Attributes: `kind` ("hybrid", "bm25" or "dense"), `passages` (the indexed chunks, in index
    order), `retriever`, `chunk_words` / `overlap_words` (None / 0 when passages were indexed
    whole), `embedder_name` (None for BM25), `n_source_passages` (passages before chunking).
    """

    def __init__(
        self,
        kind: str,
        passages: list[Passage],
        retriever: Retriever,
        chunk_words: int | None,
        overlap_words: int,
        n_source_passages: int,
    ) -> None:
        self.kind = kind
        self.passages = passages
        self.retriever = retriever
        self.chunk_words = chunk_words
        self.overlap_words = overlap_words
        self.n_source_passages = n_source_passages

    @property
    def embedder_name(self) -> str | None:
        dense = _dense_part(self.retriever)
        return dense.embedder.name if dense is not None else None

    # -- build and search ---------------------------------------------------------------

    @classmethod
    def build(
        cls,
        passages: Sequence[Passage],
        kind: str = "hybrid",
        chunk_words: int | None = 200,
        overlap_words: int = 20,
        embedder: Embedder | str | None = None,
        k_rrf: float = 60,
    ) -> Index:
        """Chunk `passages` (unless chunk_words is None) and index them.

        `embedder` (dense and hybrid only): an `Embedder` (or any object with `name`, `dim`
        and `encode`), a model name or path, or None for the default MiniLM.

        Raises `InputError` for an unknown kind, bad chunking parameters, no passages, or
        passage ids that are not unique after chunking.
        """
        if kind not in KINDS:
            raise InputError(f"unknown index kind {kind!r}; choose one of {', '.join(KINDS)}")
        passages = list(passages)
        if not passages:
            raise InputError("cannot build an index over zero passages")
        if chunk_words is None:
            chunks, overlap_words = passages, 0
        else:
            chunks = chunking.chunk_passages(passages, chunk_words, overlap_words)
            if not chunks:
                raise InputError("every passage is empty; nothing to index")
        _check_unique_ids(chunks)
        if kind != "bm25" and (embedder is None or isinstance(embedder, str)):
            embedder = Embedder.load(embedder)

        bm25 = BM25Retriever.build(chunks) if kind in ("bm25", "hybrid") else None
        dense = DenseRetriever.build(chunks, embedder) if kind in ("dense", "hybrid") else None
        return cls(kind, chunks, _combine(kind, bm25, dense, k_rrf), chunk_words, overlap_words, len(passages))

    def search(self, query: str, k: int = 5) -> list[ScoredPassage]:
        """The (up to) k best passages for `query`, best first, ranks from 0.

        BM25 returns only passages sharing a word with the query, so a "bm25" index may return
        fewer than k. Raises `InputError` for an empty query or k < 1.
        """
        check_k(k)
        return self.retriever.search(query, k)

    def search_many(self, queries: Sequence[str], k: int = 5) -> list[list[ScoredPassage]]:
        """`search` for several queries at once (dense encoding is batched)."""
        check_k(k)
        return self.retriever.search_many(list(queries), k)

    @property
    def fingerprint(self) -> str:
        """16 hex digits naming the indexed chunks (ids and texts): what a calibration was made on."""
        import hashlib
        import json

        blob = json.dumps([[p.id, p.text] for p in self.passages], ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()[:16]

    def __len__(self) -> int:
        return len(self.passages)

    def __repr__(self) -> str:
        return (
            f"Index(kind={self.kind!r}, passages={len(self)}, "
            f"embedder={self.embedder_name!r}, chunk_words={self.chunk_words})"
        )

    # -- persistence ----------------------------------------------------------------------

    def meta(self) -> dict[str, Any]:
        """What meta.json records (also handy for reports)."""
        hybrid = self.retriever if isinstance(self.retriever, HybridRetriever) else None
        return {
            "format": FORMAT,
            "version": FORMAT_VERSION,
            "kind": self.kind,
            "embedder": self.embedder_name,
            "chunk_words": self.chunk_words,
            "overlap_words": self.overlap_words,
            "k_rrf": hybrid.k_rrf if hybrid else None,
            "n_passages": len(self.passages),
            "n_source_passages": self.n_source_passages,
        }

    def save(self, directory: str | os.PathLike[str]) -> Path:
        """Write the index to `directory` (replacing an index already there) and return its path.

        Refuses (`InputError`) to replace a file, or a non-empty folder that is not an index.
        """
        target = Path(directory).expanduser().absolute()
        _check_replaceable(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        # Not tempfile.mkdtemp: its folders are private (0700), and the index should get the
        # same permissions as any folder the user creates.
        tmp = target.parent / f".{target.name}.tmp-{uuid.uuid4().hex[:8]}"
        tmp.mkdir()
        try:
            self._write(tmp)
            _swap_into_place(tmp, target)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        return target

    def _write(self, d: Path) -> None:
        with (d / _PASSAGES).open("w", encoding="utf-8") as f:
            for p in self.passages:
                f.write(json.dumps(p.to_dict(), ensure_ascii=False) + "\n")
        bm25, dense = _bm25_part(self.retriever), _dense_part(self.retriever)
        if bm25 is not None:
            bm25.save(d / "bm25")
        if dense is not None:
            dense.save(d / "dense")
        # meta.json last: its presence marks a complete folder.
        (d / _META).write_text(json.dumps(self.meta(), indent=2) + "\n", encoding="utf-8")

    @classmethod
    def load(cls, directory: str | os.PathLike[str], embedder: Embedder | None = None) -> Index:
        """Read an index written by `save`.

        Dense and hybrid indexes reload the embedder named in meta.json unless `embedder` is
        given (it must be the same model). Raises `InputError` if the folder is missing, is not
        a verirag index, was written by an incompatible version, or is corrupt.
        """
        d = Path(directory).expanduser()
        if not d.is_dir():
            raise InputError(f"no index at {d}: folder does not exist")
        meta = _read_meta(d)
        passages = _read_passages(d / _PASSAGES, d)
        if len(passages) != meta["n_passages"]:
            raise corrupt_index_file(
                d / _PASSAGES, f"{len(passages)} passages where {_META} counts {meta['n_passages']}", d
            )
        kind = meta["kind"]
        bm25 = BM25Retriever.load(d / "bm25", passages) if kind in ("bm25", "hybrid") else None
        dense = DenseRetriever.load(d / "dense", passages, embedder) if kind in ("dense", "hybrid") else None
        k_rrf = meta["k_rrf"] if meta.get("k_rrf") is not None else 60
        return cls(
            kind,
            passages,
            _combine(kind, bm25, dense, k_rrf),
            meta.get("chunk_words"),
            int(meta.get("overlap_words") or 0),
            int(meta.get("n_source_passages", len(passages))),
        )


# -- helpers ------------------------------------------------------------------------------


def _combine(kind: str, bm25: BM25Retriever | None, dense: DenseRetriever | None, k_rrf: float) -> Retriever:
    if kind == "hybrid":
        assert bm25 is not None and dense is not None
        return HybridRetriever(bm25, dense, k_rrf=k_rrf)
    retriever = bm25 if kind == "bm25" else dense
    assert retriever is not None
    return retriever


def _bm25_part(r: Retriever) -> BM25Retriever | None:
    if isinstance(r, HybridRetriever):
        return r.bm25
    return r if isinstance(r, BM25Retriever) else None


def _dense_part(r: Retriever) -> DenseRetriever | None:
    if isinstance(r, HybridRetriever):
        return r.dense
    return r if isinstance(r, DenseRetriever) else None


def _check_unique_ids(passages: list[Passage]) -> None:
    seen: set[str] = set()
    for p in passages:
        if p.id in seen:
            raise InputError(f"passage id {p.id!r} occurs more than once; ids must be unique")
        seen.add(p.id)


def _check_replaceable(target: Path) -> None:
    if not target.exists():
        return
    if not target.is_dir():
        raise InputError(f"cannot save an index to {target}: a file of that name exists")
    if (target / _META).exists() or not any(target.iterdir()):
        return
    raise InputError(
        f"cannot save an index to {target}: the folder is not empty and is not a "
        "verirag index (no meta.json); choose another folder"
    )


def _swap_into_place(tmp: Path, target: Path) -> None:
    """Rename the finished `tmp` folder to `target`, moving an existing index aside first.

    A folder cannot be atomically replaced by rename on every OS, so the old one is renamed
    away, the new one renamed in, then the old one deleted; if the second rename fails the old
    index is put back.
    """
    if not target.exists():
        os.replace(tmp, target)
        return
    old = target.parent / f".{target.name}.old-{uuid.uuid4().hex[:8]}"
    os.replace(target, old)
    try:
        os.replace(tmp, target)
    except BaseException:
        os.replace(old, target)
        raise
    shutil.rmtree(old, ignore_errors=True)


def _read_meta(d: Path) -> dict[str, Any]:
    path = d / _META
    if not path.is_file():
        raise InputError(f"{d} is not a verirag index (no {_META}); build one with `verirag index CORPUS --out {d}`")
    meta = read_index_json(path, d)
    if meta.get("format") != FORMAT:
        raise InputError(f"{d} is not a verirag index ({_META} has no format {FORMAT!r}); {rebuild_hint(d)}")
    if meta.get("version") != FORMAT_VERSION:
        raise InputError(
            f"index at {d} has format version {meta.get('version')!r}, this verirag "
            f"reads version {FORMAT_VERSION}; {rebuild_hint(d)}"
        )
    if meta.get("kind") not in KINDS:
        raise corrupt_index_file(path, f"unknown kind {meta.get('kind')!r}", d)
    if isinstance(meta.get("n_passages"), bool) or not isinstance(meta.get("n_passages"), int):
        raise corrupt_index_file(path, "no passage count", d)
    for key in ("chunk_words", "k_rrf", "overlap_words", "n_source_passages"):
        value = meta.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int | float)):
            raise corrupt_index_file(path, f"{key} is {value!r}, not a number", d)
    return meta


def _read_passages(path: Path, index_dir: Path) -> list[Passage]:
    passages: list[Passage] = []
    try:
        with path.open(encoding="utf-8") as f:
            for lineno, line in enumerate(f, start=1):
                if not line.strip():
                    continue
                try:
                    passage = Passage.from_dict(json.loads(line))
                except (ValueError, KeyError, TypeError, AttributeError, RecursionError) as e:
                    raise corrupt_index_file(path, f"line {lineno}: {type(e).__name__}: {e}", index_dir) from e
                if not isinstance(passage.text, str):
                    raise corrupt_index_file(path, f"line {lineno}: the text is not a string", index_dir)
                passages.append(passage)
    except (OSError, UnicodeDecodeError) as e:
        raise corrupt_index_file(path, e, index_dir) from e
    return passages


def pooled_passages(examples: Sequence[Example]) -> list[Passage]:
    """Every passage of the examples once: the one corpus a deployment would retrieve from."""
    return list({p.id: p for ex in examples for p in ex.passages}.values())


def index_or_pooled(
    examples: Sequence[Example],
    index: str | os.PathLike[str] | None = None,
    *,
    kind: str = "bm25",
    source: str = "the data",
) -> Index:
    """The index saved at `index`, or else one of `kind` over the examples' pooled passages, unchunked
    (the pool holds every question's passages, held-out ones included: it stands for the one corpus
    a deployment retrieves from). `source` names the examples in the error when none has a passage."""
    if index is not None:
        return Index.load(index)
    pooled = pooled_passages(examples)
    if not pooled:
        raise InputError(f"{source} has no passages to pool: give an index (`verirag index`)")
    return Index.build(pooled, kind=kind, chunk_words=None)
