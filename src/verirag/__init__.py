"""verirag: retrieval-augmented question answering that verifies its answers.

from verirag import Pipeline
p = Pipeline.from_preset("local"); p.index("docs/"); r = p.ask("...")
"""

from __future__ import annotations

from verirag.version import __version__

__all__ = ["Pipeline", "PipelineConfig", "__version__"]


def __getattr__(name: str):
    # Lazy: `import verirag` stays cheap; models and torch load only when a pipeline is used.
    if name in ("Pipeline", "PipelineConfig"):
        from verirag.awf import pipeline

        return getattr(pipeline, name)
    raise AttributeError(f"module 'verirag' has no attribute {name!r}")
