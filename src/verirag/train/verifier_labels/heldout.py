"""The held-out split of the issue-36 recipes: whole questions, whole documents, never mixed.

`verirag label verifier --split train|heldout` labels only that split's questions (a question's
split never depends on n, the seed or the recipe, so the two files never share a question):
- nq, hotpotqa: a question is held out when a hash of its dataset and id falls in the first
  HELDOUT_PERCENT of 100 buckets;
- docs: a whole package is held out (HELDOUT_PACKAGES: the man pages, a kind of document the
  training packages hold none of), every paragraph of every file of it; the other packages train.
"""

from __future__ import annotations

import hashlib

SPLITS = ("train", "heldout")
HELDOUT_PERCENT = 10
HELDOUT_PACKAGES = frozenset({"manpages", "manpages-dev"})


def doc_package(example_id: str) -> str:
    """The package of a docs paragraph id "<package>:<path>#<paragraph>"."""
    return example_id.split(":", 1)[0]


def split_of(dataset: str, example_id: str) -> str:
    """ "train" or "heldout" (module doc)."""
    if dataset == "docs":
        return "heldout" if doc_package(example_id) in HELDOUT_PACKAGES else "train"
    bucket = int.from_bytes(hashlib.sha256(f"{dataset}|{example_id}".encode()).digest()[:4], "big") % 100
    return "heldout" if bucket < HELDOUT_PERCENT else "train"
