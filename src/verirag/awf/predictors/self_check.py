"""Self-check: in-context verification, the P(True) family (Kadavath et al., 2022).

After the generator has answered, the same conversation continues with one short question, "is
your answer fully supported by the context?" (prompt `prompts/self_check.yaml`), and the score is
P(Yes) / (P(Yes) + P(No)) of the first reply token. The passages and the answer are already in
the model's context, so on the llama.cpp backend, where the generation's KV state is kept (prefix
reuse), the check reads only its own ~20 new tokens; the answer's `token_ids` make the backend
read the answer exactly as decoding did, and replay that path when the state is gone, so the
score never depends on what happened to be cached. On an OpenAI-compatible endpoint reusing the
prefix is the server's business (vLLM's automatic prefix caching, llama.cpp server's prompt cache).

An answer that did not come from a generator of this process (`verify(question, answer,
passages)`, e.g. another RAG system's answer) is checked in the conversation the Vanilla
generator would have had. Needs next-token logprobs (CapabilityError at construction otherwise).

The score judges the passages together, so it names no passage; which passage supports the answer
is attributed lexically, at no model cost: `per_passage` is each passage's K-Precision (the share of
the answer's tokens it contains) and `best` the highest, so an answer still comes with the passage
that supports it.
"""

from __future__ import annotations

from collections.abc import Sequence

from verirag.awf.generators.base import Answer
from verirag.awf.predictors._conversation import ConversationPredictor
from verirag.awf.predictors._yes_no import branch_probability
from verirag.awf.registry import register
from verirag.llm.base import LLM, NEXT_TOKEN
from verirag.prompts import DEFAULT_LAYOUT, check_layout, load_prompt
from verirag.types import Passage


@register("predictor", "self_check")
class SelfCheckPredictor(ConversationPredictor):
    needs: tuple[str, ...] = (NEXT_TOKEN,)
    request_name = "self-check request"

    def __init__(self, llm: LLM, *, top_k: int = 20, layout: str = DEFAULT_LAYOUT):
        llm.require(*self.needs)
        self.llm = llm
        self.top_k = top_k
        self.layout = check_layout(layout)  # of the Vanilla conversation `verify` builds for an outside answer
        self.prompt = load_prompt("self_check")
        self.name = f"self_check[{llm.model_id}]"

    def messages(self, answer: Answer) -> list[dict]:
        """The generator's conversation, its reply (with the generated ids where the backend gave
        them), and the follow-up question."""
        gen = answer.generation
        reply: dict = {"role": "assistant", "content": gen.text if gen is not None else answer.text}
        if gen is not None and gen.token_ids:
            reply["token_ids"] = list(gen.token_ids)
        return [*answer.prompt, reply, {"role": "user", "content": self.prompt.user}]

    def conversation_score(self, answer: Answer, passages: Sequence[Passage]) -> tuple[float, str | None]:
        lps = self.llm.next_token_logprobs(self.messages(answer), top_k=self.top_k, candidates=("Yes", "No"))
        score, _raw, error = branch_probability(lps, ("yes",), ("no",))
        return score, error
