"""`verirag index`: build a reusable retrieval index."""

from __future__ import annotations

from pathlib import Path

import typer

from verirag.cli._shared import err, out, print_skipped


def index(
    path: Path = typer.Argument(..., help="Folder of .txt/.md files, a file, or a JSONL of passages."),
    out_dir: Path = typer.Option(..., "--out", help="Where to write the index."),
    retrieval: str = typer.Option("hybrid", help="hybrid, bm25 or dense."),
    chunk_words: int = typer.Option(200, help="Words per chunk."),
    overlap_words: int = typer.Option(20, help="Words shared by consecutive chunks."),
):
    """Build a reusable index; `verirag ask --index DIR` uses it."""
    from verirag.retrieval import Index, load_corpus

    loaded = load_corpus(path)
    print_skipped(loaded.skipped)
    with err.status(f"indexing {len(loaded.passages)} documents…"):
        idx = Index.build(loaded.passages, kind=retrieval, chunk_words=chunk_words, overlap_words=overlap_words)
        idx.save(out_dir)
    out.print(f"indexed {len(loaded.passages)} documents as {len(idx)} passages ({retrieval}) -> {out_dir}")
