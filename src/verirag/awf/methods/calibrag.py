"""CalibRAG as an AwF method (Jang et al., section 3.4, stages 2 and 4 over the example's
passages): the forecaster f(q, d) scores every passage, the Vanilla generator answers from the
best `keep` of them, and the score is f(q, d*), the forecast that this answer is right.

    methods: ["calibrag(forecaster=runs/calibrag-small/forecaster)"]

The re-query stage needs a retriever, which an experiment's fixed passages do not have; it runs
in the pipeline (`verirag ask --forecaster`). The score is a forecast of correctness rather than
of faithfulness, which is what makes it comparable with the AwF predictors on the same records.
"""

from __future__ import annotations

from verirag.awf.generators.base import Answer
from verirag.awf.generators.vanilla import VanillaGenerator
from verirag.awf.methods.base import AwFMethod, MethodOutput
from verirag.awf.registry import register
from verirag.awf.trace import Trace
from verirag.errors import InputError
from verirag.learned.forecaster import load_forecaster
from verirag.prompts import DEFAULT_LAYOUT


@register("method", "calibrag")
class CalibRAGMethod(AwFMethod):
    hard = False

    def __init__(
        self, llm, *, forecaster: str | None = None, keep: int = 1, max_tokens: int = 96, layout: str = DEFAULT_LAYOUT
    ):
        if not forecaster:
            raise InputError(
                "calibrag needs a trained forecaster: calibrag(forecaster=DIR), from `verirag train forecaster`"
            )
        if keep < 1:
            raise InputError("calibrag: keep must be at least 1")
        self.llm = llm
        self.forecaster = load_forecaster(forecaster, llm=llm)
        self.generator = VanillaGenerator(llm, max_tokens=max_tokens, layout=layout)
        self.keep = keep

    def run(self, trace: Trace) -> MethodOutput:
        if not trace.passages:
            return MethodOutput(answer="", score=0.0, error="no passages to rerank")
        # keyed by the forecaster's training data too: a folder retrained in place is another forecaster
        f = self.compute(
            trace,
            lambda: self.forecaster.score_passages(trace.question, trace.passages),
            "forecast",
            data=self.forecaster.fingerprints.get("data", ""),
        )
        order = sorted(range(len(f)), key=lambda i: (-f[i], i))[: self.keep]
        passages = [trace.passages[i] for i in order]
        ans: Answer = self.compute(
            trace, lambda: self.generator.answer(trace.question, passages), "answer", kept=[p.id for p in passages]
        )
        details = {"forecast": f, "kept": order, "best": order[0], "per_passage": f}
        support = {"per_passage": list(f), "best": order[0]}
        if ans.error:
            return MethodOutput(answer=ans.text, score=0.0, error=ans.error, details=details, **support)
        return MethodOutput(answer=ans.text, score=f[order[0]], details=details, **support)
