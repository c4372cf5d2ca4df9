"""Questions to train or calibrate on, named the way `verirag train` / `calibrate-retrieval` take them."""

from __future__ import annotations

from pathlib import Path

from verirag.errors import InputError


def load_questions(data: str, n: int | None = None, seed: int = 0) -> list:
    """A dataset by name (`verirag_lab.datasets`: nq, hotpotqa, ...) or a JSONL file of examples
    (question, references, passages), at most `n` drawn with `seed`."""
    from verirag_lab.datasets import load_dataset
    from verirag_lab.datasets.registry import dataset_names

    if data in dataset_names():
        return load_dataset(data, n=n, seed=seed)
    path = Path(data)
    if not path.is_file():
        raise InputError(f"{data!r} is neither a dataset name ({', '.join(dataset_names())}) nor a file")
    return load_dataset("jsonl", path, n=n, seed=seed)
