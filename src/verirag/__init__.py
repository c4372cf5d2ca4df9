"""verirag: retrieval-augmented question answering that verifies its answers.

from verirag import Verifier
r = Verifier().verify("Who designed the lighthouse?", "Ada Brennan.", ["... designed by Ada Brennan ..."])

from verirag import Pipeline
p = Pipeline.from_preset("local"); p.index("docs/"); r = p.ask("...")

from verirag import evaluate, fit_threshold
"""

from __future__ import annotations

from verirag.version import __version__

__all__ = [
    "AnswerSpec",
    "AskResult",
    "Evaluation",
    "Passage",
    "Pipeline",
    "PipelineConfig",
    "ScoredPassage",
    "StageResult",
    "Verifier",
    "VerifyResult",
    "__version__",
    "evaluate",
    "fit_threshold",
]

# Lazy: `import verirag` stays cheap; models and torch load only when a pipeline is used.
_WHERE = {
    "AnswerSpec": "verirag.awf.answer_spec",
    "StageResult": "verirag.awf.stages",
    "ScoredPassage": "verirag.types",
    "Pipeline": "verirag.awf.pipeline",
    "PipelineConfig": "verirag.awf.pipeline",
    "Verifier": "verirag.api",
    "evaluate": "verirag.api",
    "fit_threshold": "verirag.api",
    "Evaluation": "verirag.api",
    "Passage": "verirag.types",
    "AskResult": "verirag.types",
    "VerifyResult": "verirag.types",
}


def __getattr__(name: str):
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(_WHERE[name]), name)
    raise AttributeError(f"module 'verirag' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(__all__)
