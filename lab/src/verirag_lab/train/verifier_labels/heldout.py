"""The held-out split of the issue-36 recipes: whole questions, whole documents, never mixed.

`verirag label verifier --split train|heldout|final` labels only that split's questions (a
question's split never depends on n, the seed or the recipe, so the files never share a question):
- nq, hotpotqa, nomiracl: a question is held out when a hash of its dataset and id falls in the
  first HELDOUT_PERCENT of 100 buckets, or when it is one of the committed own-answer evaluation
  groups (OWN_GROUPS_FILE: those runs chose which verifier shipped, so they are a dev set);
- docs: a whole package is held out (HELDOUT_PACKAGES: the man pages, a kind of document the
  training packages hold none of; any file under usr/share/man is a man page whatever package
  names it), every paragraph of every file of it;
- final: the GNU Info manuals (FINAL_PACKAGES, any file under usr/share/info) are kept back from
  training and from every choice, dev sets included: labelled once, for the final table.
`verirag_lab.train.guard.TrainingGuard` refuses every held-out or final example at training time,
whatever the labels file or the command line says.
"""

from __future__ import annotations

import hashlib
import re
from functools import cache
from pathlib import Path

from verirag.errors import InputError

SPLITS = ("train", "heldout", "final")
HELDOUT_PERCENT = 10
HELDOUT_PACKAGES = frozenset({"manpages", "manpages-dev"})
FINAL_PACKAGES = frozenset({"info-manuals"})
MAN_PATH = re.compile(r"(?:^|/)usr/share/man/")
INFO_PATH = re.compile(r"(?:^|/)usr/share/info/")
OWN_GROUPS_FILE = Path(__file__).resolve().parents[5] / "data" / "verifier" / "own_answers" / "groups.txt"


def doc_package(example_id: str) -> str:
    """The package of a docs paragraph id "<package>:<path>#<paragraph>"."""
    return example_id.split(":", 1)[0]


def doc_split(example_id: str) -> str:
    """The split of a docs paragraph (or document) id: by package, and by path for man and Info pages."""
    package, _, path = example_id.partition(":")
    if package in FINAL_PACKAGES or INFO_PATH.search(path):
        return "final"
    if package in HELDOUT_PACKAGES or MAN_PATH.search(path):
        return "heldout"
    return "train"


@cache
def own_answer_groups(path: Path = OWN_GROUPS_FILE) -> frozenset[str]:
    """The question groups (DATASET:ID) of the committed own-answer runs. A missing file is an
    error: without it nothing keeps those evaluation questions out of training."""
    try:
        lines = Path(path).read_text(encoding="utf-8").splitlines()
    except OSError as e:
        raise InputError(
            f"the own-answer evaluation groups ({path}) cannot be read ({e}): labelling and training the "
            "verifier run from a checkout of the repository, which holds them"
        ) from None
    return frozenset(s for line in lines if (s := line.strip()) and not s.startswith("#"))


def hash_split(dataset: str, example_id: str) -> str:
    """The split a question's hash alone gives it (module doc)."""
    bucket = int.from_bytes(hashlib.sha256(f"{dataset}|{example_id}".encode()).digest()[:4], "big") % 100
    return "heldout" if bucket < HELDOUT_PERCENT else "train"


def split_of(dataset: str, example_id: str) -> str:
    """ "train", "heldout" or "final" (module doc)."""
    if dataset == "docs":
        return doc_split(example_id)
    if f"{dataset}:{example_id}" in own_answer_groups():
        return "heldout"
    return hash_split(dataset, example_id)
