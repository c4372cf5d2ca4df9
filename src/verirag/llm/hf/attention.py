"""Attention weights of the HF backend: whole maps, and lookback sums reduced layer by layer.

They need the "eager" attention implementation: it is the default on CPU; on GPU the faster default
(sdpa) is kept and these passes switch to eager when the installed transformers allows it, else
raise CapabilityError (load with attn_implementation="eager").
"""

from __future__ import annotations

import contextlib
from collections.abc import Sequence
from typing import Any

import numpy as np

from verirag.errors import CapabilityError, InputError
from verirag.llm.lookback import LookbackRatios, LookbackSums, char_spans, ratios_from_sums, segment_sums, token_spans
from verirag.types import Prompt


class AttentionReader:
    """The attention operations of `TransformersLLM`, which provides model, tokenizer, torch, device,
    model_id, prefill_chunk, render, prompt_ids, continuation_ids, pieces, check_length, forward."""

    def attentions(
        self, prompt: Prompt, continuation: str | None = None, *, layers: Sequence[int] | None = None
    ) -> dict[str, Any]:
        """Attention weights of one forward pass over prompt (+ continuation).

        Returns {"attentions": float32 array [layers, heads, seq, seq] (row i = how token i attends
        to tokens 0..i; rows sum to 1), "tokens": token texts, "input_ids": ids,
        "continuation_start": index of the first continuation token (= seq length if none),
        "layers": the layer indices returned}. `layers` selects layers to save memory.
        """
        p_ids = self.prompt_ids(prompt)
        c_ids = self.continuation_ids(continuation) if continuation else []
        ids = p_ids + c_ids
        self.check_length(len(ids), 0)
        with self.eager_attention():
            out = self.forward(ids, output_attentions=True)
        atts = out.attentions
        if not atts or atts[0] is None:
            raise CapabilityError(
                f"{self.model_id} returned no attention weights; load it with attn_implementation='eager'"
            )
        chosen = list(range(len(atts))) if layers is None else [int(i) for i in layers]
        arr = self.torch.stack([atts[i][0].float() for i in chosen]).cpu().numpy().astype(np.float32)
        tokens = self.pieces(p_ids) + self.pieces(c_ids, p_ids)
        return {
            "attentions": arr,
            "tokens": tokens,
            "input_ids": ids,
            "continuation_start": len(p_ids),
            "layers": chosen,
        }

    def lookback_sums(self, prompt: Prompt, continuation: str, segments: Sequence[str]) -> LookbackSums:
        """Per-segment attention sums of the answer tokens (`verirag.llm.lookback`), teacher-forced
        over prompt ids + continuation ids (tokenised separately, as `score`).

        The prompt is read into the KV cache in chunks of `prefill_chunk` tokens, then the answer
        tokens in one pass, where a forward hook on each layer's attention module reduces that
        layer's weights [heads, answer, seq] to segment sums as soon as they are computed. So the
        largest attention block alive is heads x prefill_chunk x seq, never [layers, heads, seq,
        seq] (the numbers equal a single pass's to float32 rounding, ~1e-6)."""
        torch = self.torch
        if not continuation or not continuation.strip():
            raise InputError("lookback ratios need a non-empty answer")
        text = self.render(prompt)
        enc = self.tokenizer(text, add_special_tokens=isinstance(prompt, str), return_offsets_mapping=True)
        p_ids = list(enc["input_ids"])
        spans = token_spans(enc["offset_mapping"], char_spans(text, segments))
        c_ids = self.continuation_ids(continuation)
        if not c_ids:
            raise InputError("the answer is empty after tokenisation")
        self.check_length(len(p_ids), len(c_ids))
        n_ctx, n_ans = len(p_ids), len(c_ids)
        modules = [m for name, m in self.model.named_modules() if name.endswith("self_attn")]
        if not modules:
            raise CapabilityError(f"{self.model_id}: no attention modules named *.self_attn to read")
        per_layer: list[tuple] = [None] * len(modules)  # type: ignore[list-item]

        def reducer(layer: int):
            def hook(_module, _args, output):
                weights = output[1] if isinstance(output, tuple) and len(output) > 1 else None
                if weights is None:
                    raise CapabilityError(
                        f"{self.model_id}: the attention module returned no weights; "
                        "load it with attn_implementation='eager'"
                    )
                rows = weights[0].double().cpu().numpy()  # [heads, answer tokens, prompt + answer]
                if rows.shape[1:] != (n_ans, n_ctx + n_ans):
                    raise CapabilityError(
                        f"{self.model_id}: attention weights of shape {tuple(weights.shape)}, "
                        f"expected rows for {n_ans} answer tokens over {n_ctx + n_ans}"
                    )
                per_layer[layer] = segment_sums(rows, n_ctx, spans)

            return hook

        from transformers import DynamicCache

        cache = DynamicCache()
        with self.eager_attention(), torch.inference_mode():
            # the prompt in chunks (its own attention weights are not needed), then the answer rows
            for start in range(0, n_ctx, self.prefill_chunk):
                chunk = torch.tensor([p_ids[start : start + self.prefill_chunk]], device=self.device)
                self.model.model(input_ids=chunk, past_key_values=cache, use_cache=True)
            handles = [m.register_forward_hook(reducer(i)) for i, m in enumerate(modules)]
            try:
                self.model.model(
                    input_ids=torch.tensor([c_ids], device=self.device), past_key_values=cache, use_cache=True
                )  # the decoder only: no logits needed
            finally:
                for h in handles:
                    h.remove()
        return LookbackSums(
            context=np.stack([c for c, _, _ in per_layer]),
            output=np.stack([o for _, o, _ in per_layer]),
            chunks=np.stack([k for _, _, k in per_layer]),
            n_context=n_ctx,
            chunk_tokens=[b - a for a, b in spans],
        )

    def lookback_ratios(self, prompt: Prompt, continuation: str, segments: Sequence[str]) -> LookbackRatios:
        return ratios_from_sums(self.lookback_sums(prompt, continuation, segments))

    def eager_attention(self):
        """A context in which the model computes explicit attention weights."""
        current = getattr(self.model.config, "_attn_implementation", None)
        if current in (None, "eager"):
            return contextlib.nullcontext()
        setter = getattr(self.model, "set_attn_implementation", None)
        if setter is None:
            raise CapabilityError(
                f"{self.model_id} was loaded with attn_implementation={current!r}, which gives no "
                "attention weights; load it with attn_implementation='eager'"
            )

        @contextlib.contextmanager
        def switch():
            setter("eager")
            try:
                yield
            finally:
                setter(current)

        return switch()
