"""Every dataset loader by name: `load_dataset("nq", n=200, k=5)`, `dataset_names()`.

A loader is found by its dataset name, lives in the module of that name, and takes a local path
(nothing here reaches the network). Without a path, the file is looked up in the data folder named
by $VERIRAG_DATA_DIR; unset, that is an `InputError` saying so (the library never guesses where a
checkout keeps its benchmark files: the Makefile, the benchmarks and the tests say it themselves).
Datasets with no default file always need an explicit path.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from verirag.errors import InputError
from verirag.settings import settings
from verirag.types import Example

from ._sampling import check_n
from .bioasq import load_bioasq
from .hotpotqa import load_hotpotqa
from .hotpotqa_original import load_hotpotqa_original
from .instruct_qa_human import load_instruct_qa_human
from .jsonl import load_jsonl
from .nomiracl import load_nomiracl
from .nq import load_nq
from .nq_open import load_nq_open
from .squad2 import load_squad2
from .topiocqa import load_topiocqa

DATA_DIR_ENV = "VERIRAG_DATA_DIR"


@dataclass(frozen=True)
class DatasetInfo:
    """A registered loader: `default` is its file or folder relative to the data folder (None:
    a path must be given), `expects` says in words what a path should point to."""

    name: str
    loader: Callable[..., list[Example]]
    default: str | None
    expects: str
    description: str

    def options(self) -> list[str]:
        """Keyword options of the loader, besides n and seed."""
        params = inspect.signature(self.loader).parameters.values()
        return [p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY and p.name not in ("n", "seed")]


_DATASETS = {
    d.name: d
    for d in [
        DatasetInfo(
            "nq",
            load_nq,
            "lost_in_the_middle_nq/nq-open-oracle.jsonl.gz",
            "nq-open-oracle.jsonl.gz (nelson-liu/lost-in-the-middle), with a "
            "hotpotqa_amor_subset/ folder in the same data folder",
            "NQ-open questions, top-k passages retrieved from oracle + HotpotQA paragraphs",
        ),
        DatasetInfo(
            "hotpotqa",
            load_hotpotqa,
            "hotpotqa_amor_subset",
            "a HotpotQA file or a folder of them (JSON or JSON lines)",
            "HotpotQA twins: distractors only / one distractor replaced by a gold paragraph",
        ),
        DatasetInfo(
            "nomiracl",
            load_nomiracl,
            "nomiracl_en",
            "the NoMIRACL folder holding relevant/ and non_relevant/ *.jsonl",
            "NoMIRACL English: queries with and without a relevant passage",
        ),
        DatasetInfo(
            "instruct_qa_human",
            load_instruct_qa_human,
            "instruct_qa_human",
            "the instruct_qa_human folder (or one of its .jsonl files)",
            "model responses with human correctness labels (Adlakha et al.)",
        ),
        DatasetInfo(
            "nq_open",
            load_nq_open,
            "nq_open/NQ-open.dev.jsonl",
            "an NQ-open .jsonl file",
            "NQ-open questions and answers, no passages",
        ),
        DatasetInfo(
            "hotpotqa_original",
            load_hotpotqa_original,
            None,
            "an official HotpotQA file (JSON array or JSON lines)",
            "official HotpotQA: twins or the 10-paragraph distractor setting",
        ),
        DatasetInfo(
            "topiocqa",
            load_topiocqa,
            "topiocqa/topiocqa_dev.early-2021-11.json",
            "a TopiOCQA .json file",
            "TopiOCQA conversational turns with history",
        ),
        DatasetInfo(
            "squad2",
            load_squad2,
            None,
            "a SQuAD 2.0 .json file",
            "SQuAD 2.0: one paragraph per question, unanswerable ones included",
        ),
        DatasetInfo(
            "bioasq",
            load_bioasq,
            None,
            'a BioASQ .json file ({"questions": [...]})',
            "BioASQ questions with their snippets",
        ),
        DatasetInfo(
            "jsonl", load_jsonl, None, "a .jsonl file in verirag's generic format", "your own benchmark as JSON lines"
        ),
    ]
}


def dataset_names() -> list[str]:
    """Names `load_dataset` accepts, in registration order (the benchmarks first)."""
    return list(_DATASETS)


def dataset_info(name: str) -> DatasetInfo:
    if name not in _DATASETS:
        raise InputError(f"unknown dataset {name!r}; choose one of {', '.join(_DATASETS)}")
    return _DATASETS[name]


def data_dir(path: str | Path | None = None) -> Path:
    """The benchmark data folder: `path` when given, else $VERIRAG_DATA_DIR; `InputError` when
    neither is set (nothing is guessed, so a missing setting never reads some other folder)."""
    if path is not None and str(path).strip():
        return Path(path).expanduser()
    explicit = settings().data_dir
    if explicit is not None:
        return explicit
    raise InputError(
        f"no benchmark data folder: set {DATA_DIR_ENV} to the folder that holds the benchmark files, "
        "or give the path (--data DIR on the command line, load_dataset(name, path) in Python)"
    )


def default_path(name: str) -> Path:
    """Where `name`'s data is looked for when no path is given; `InputError` if it is not there."""
    info = dataset_info(name)
    if info.default is None:
        raise InputError(
            f"dataset {name!r} needs a path: pass {info.expects}, e.g. load_dataset({name!r}, 'path/to/file')"
        )
    if settings().data_dir is None:
        raise InputError(
            f"dataset {name!r} has no path and {DATA_DIR_ENV} is not set: pass {info.expects} "
            f"(a dataset's `path:` in a config, load_dataset({name!r}, path) in Python), or set "
            f"{DATA_DIR_ENV} to the folder that holds {info.default}"
        )
    path = data_dir() / info.default
    if not path.exists():
        raise InputError(
            f"dataset {name!r}: expected {info.expects} at {path}, which does not "
            f"exist; pass the path explicitly or set {DATA_DIR_ENV} to the folder "
            f"that holds {info.default}"
        )
    return path


def load_dataset(
    name: str, path: str | Path | None = None, *, n: int | None = None, seed: int = 0, **options: Any
) -> list[Example]:
    """Examples of dataset `name` read from `path` (default: see `default_path`).

    `n` draws that many source questions with `random.Random(seed)` (HotpotQA twins of a
    question stay together, so `hotpotqa` returns 2n examples); `options` go to the loader
    (`dataset_info(name).options()` lists them). Raises `InputError` for an unknown name or
    option, a missing file, or malformed data.
    """
    info = dataset_info(name)
    check_n(n)
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise InputError(f"seed must be an integer, got {seed!r}")
    allowed = info.options()
    unknown = sorted(set(options) - set(allowed))
    if unknown:
        raise InputError(
            f"unknown option(s) {', '.join(unknown)} for dataset {name!r}; valid "
            f"options: {', '.join(allowed) or 'none'}"
        )
    return info.loader(default_path(name) if path is None else Path(path).expanduser(), n=n, seed=seed, **options)
