"""Dual Generation (Wu et al., 2024, ClashEval; AwF section 4.1): compare how likely the answer is
with and without the passages.

The answer is Vanilla's (taken from the trace with `trace.answer`, so compositions using
`vanilla` share the generation). Its per-token mean log-probability is computed by teacher
forcing given the Vanilla prompt with passages and given the No Context prompt
(`llm.score`, memoised in the trace under the method's keys for "score_ctx" and "score_noctx").
Perplexity is exp(-mean logprob), and the decision function is

    d = log ppl_noctx - log ppl_ctx = mean_logprob_ctx - mean_logprob_noctx,

positive when the passages make the answer more likely (the answer relies on the context).
`score` = logistic(d / temperature), monotone in d, so precision-recall curves are those of d;
`details` keeps d, both perplexities and both mean logprobs.
"""

from __future__ import annotations

import math

from verirag.awf.generators.no_context import NoContextGenerator
from verirag.awf.generators.vanilla import VanillaGenerator
from verirag.awf.methods.base import AwFMethod, MethodOutput
from verirag.awf.registry import register
from verirag.awf.trace import Trace
from verirag.errors import InputError, VeriragError
from verirag.llm.base import SCORE
from verirag.metrics.calibration import sigmoid
from verirag.prompts import DEFAULT_LAYOUT


@register("method", "dual_generation")
class DualGeneration(AwFMethod):
    hard = False
    needs = (SCORE,)

    def __init__(self, llm, *, max_tokens: int = 96, temperature: float = 1.0, layout: str = DEFAULT_LAYOUT):
        llm.require(*self.needs)
        if temperature <= 0:
            raise InputError(f"temperature must be positive, got {temperature!r}")
        self.llm = llm
        self.temperature = temperature
        self.generator = VanillaGenerator(llm, max_tokens=max_tokens, layout=layout)
        self.no_context = NoContextGenerator(llm, max_tokens=max_tokens)

    def run(self, trace: Trace) -> MethodOutput:
        ans = trace.answer(self.generator)
        if ans.error or not ans.text.strip():
            return MethodOutput(
                answer=ans.text, score=0.0, error=ans.error or "empty answer", details={"decision": None}
            )
        text = ans.text
        try:
            ctx = self.compute(
                trace,
                lambda: self.llm.score(self.generator.messages(trace.question, trace.passages), text),
                "score_ctx",
                answer=text,
            )
            noctx = self.compute(
                trace,
                lambda: self.llm.score(self.no_context.prompt.messages(question=trace.question), text),
                "score_noctx",
                answer=text,
            )
        except VeriragError as e:  # a backend failure is recorded, the example still counts
            return MethodOutput(
                answer=text, score=0.0, error=f"scoring failed: {e}", failure=e, details={"decision": None}
            )
        if not ctx.tokens or not noctx.tokens:
            return MethodOutput(
                answer=text, score=0.0, error="the backend scored no tokens", details={"decision": None}
            )
        lp_ctx, lp_noctx = ctx.mean_logprob, noctx.mean_logprob
        decision = lp_ctx - lp_noctx  # = log ppl_noctx - log ppl_ctx
        return MethodOutput(
            answer=text,
            score=sigmoid(decision / self.temperature),
            details={
                "decision": decision,
                "ppl_ctx": math.exp(-lp_ctx),
                "ppl_noctx": math.exp(-lp_noctx),
                "mean_logprob_ctx": lp_ctx,
                "mean_logprob_noctx": lp_noctx,
                "n_tokens": len(ctx.tokens),
            },
        )
