"""The demo corpus and questions that ship with verirag (our own text, about a fictional island)."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml


def corpus_path() -> Path:
    return Path(str(resources.files(__name__).joinpath("corpus")))


def questions() -> list[dict]:
    text = resources.files(__name__).joinpath("questions.yaml").read_text(encoding="utf-8")
    return list(yaml.safe_load(text)["questions"])
