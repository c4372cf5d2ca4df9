"""Lookback ratios: how much of its attention a model pays to the context while it answers.

From Geissler et al., "Towards Dependable RAG Using Factual Confidence Prediction", section 3.3
(eq. 7-9), after Lookback Lens (Chuang et al., 2024). For layer l, head h and answer token t,
with alpha the attention row of that token in one teacher-forced pass over prompt + answer:

    A_t(x)      = (1 / N_x) * sum over tokens p of segment x of alpha_{t,p}          (eq. 7)
    LR_t(c_i)   = K * A_t(c_i) / (A_t(context) + A_t(output))                      (eq. 8)
    LR(c_i)     = mean over t of LR_t(c_i)                                          (eq. 9)

- context: every prompt token (preamble, chunks, question, the chat template's own tokens);
- output: the answer tokens up to and including t (row t of a causal pass attends to them);
- c_i: the tokens of passage i in the prompt; K: the number of passages in this prompt;
- full-context (FC) ratio, as the original Lookback Lens: A_t(context) / (A_t(context) + A_t(output)).

Rows are the answer tokens' own positions (teacher forcing, as Lookback Lens's training features).
Only per-segment sums of each attention row are kept (`LookbackSums`), never the attention tensors.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from verirag.errors import InputError


@dataclass
class LookbackSums:
    """Attention of each answer token summed over each segment, for every layer and head.

    context: [L, H, T] over all prompt tokens; output: [L, H, T] over answer tokens 0..t;
    chunks: [L, H, T, K] over each passage's tokens; n_context: prompt tokens; chunk_tokens: [K].
    """

    context: np.ndarray
    output: np.ndarray
    chunks: np.ndarray
    n_context: int
    chunk_tokens: list[int]


@dataclass
class LookbackRatios:
    """Time-averaged lookback ratios of one answer: `cw` [L][H][K] (eq. 9), `fc` [L][H]."""

    cw: list[list[list[float]]]
    fc: list[list[float]]
    n_prompt: int
    n_answer: int
    chunk_tokens: list[int] = field(default_factory=list)
    cached: bool = False

    @property
    def layers(self) -> int:
        return len(self.fc)

    @property
    def heads(self) -> int:
        return len(self.fc[0]) if self.fc else 0

    def to_dict(self) -> dict:
        return {
            "cw": self.cw,
            "fc": self.fc,
            "n_prompt": self.n_prompt,
            "n_answer": self.n_answer,
            "chunk_tokens": list(self.chunk_tokens),
        }

    @classmethod
    def from_dict(cls, d: dict) -> LookbackRatios:
        return cls(
            cw=d["cw"],
            fc=d["fc"],
            n_prompt=int(d["n_prompt"]),
            n_answer=int(d["n_answer"]),
            chunk_tokens=list(d.get("chunk_tokens", [])),
        )


def segment_sums(rows: np.ndarray, n_context: int, spans: Sequence[tuple[int, int]]):
    """Reduce one layer's attention rows [H, T, S] of the answer tokens (S = n_context + T)
    to (context [H, T], output [H, T], chunks [H, T, K])."""
    context = rows[..., :n_context].sum(-1)
    output = rows[..., n_context:].sum(-1)
    chunks = (
        np.stack([rows[..., a:b].sum(-1) for a, b in spans], axis=-1)
        if spans
        else np.zeros(rows.shape[:2] + (0,), dtype=rows.dtype)
    )
    return context, output, chunks


def ratios_from_sums(sums: LookbackSums) -> LookbackRatios:
    """Eq. 7-9 (chunk-wise) and the full-context ratio from per-segment attention sums."""
    L, H, T = sums.context.shape
    if T < 1:
        raise InputError("lookback ratios need at least one answer token")
    if sums.n_context < 1:
        raise InputError("lookback ratios need a non-empty prompt")
    a_ctx = sums.context / sums.n_context
    a_out = sums.output / np.arange(1, T + 1)  # output segment of token t: answer tokens 0..t
    denom = a_ctx + a_out
    k = len(sums.chunk_tokens)
    if k:
        if min(sums.chunk_tokens) < 1:
            raise InputError("a passage covers no prompt token")
        a_chunks = sums.chunks / np.asarray(sums.chunk_tokens, dtype=np.float64)
        cw = (k * a_chunks / denom[..., None]).mean(axis=2)  # [L, H, K]
    else:
        cw = np.zeros((L, H, 0))
    fc = (a_ctx / denom).mean(axis=2)
    return LookbackRatios(
        cw=cw.tolist(), fc=fc.tolist(), n_prompt=sums.n_context, n_answer=T, chunk_tokens=list(sums.chunk_tokens)
    )


def char_spans(text: str, segments: Sequence[str]) -> list[tuple[int, int]]:
    """Where each segment occurs in `text`, searched in order (each after the previous one)."""
    spans, cursor = [], 0
    for i, seg in enumerate(segments):
        seg = seg.strip()
        if not seg:
            raise InputError(f"segment {i} is empty")
        at = text.find(seg, cursor)
        if at < 0:
            raise InputError(
                f"passage {i + 1} does not occur in the prompt (after the passages "
                "before it), so its tokens cannot be found"
            )
        spans.append((at, at + len(seg)))
        cursor = at + len(seg)
    return spans


def token_spans(offsets: Sequence[tuple[int, int]], spans: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """Token index ranges [a, b) of the tokens whose characters overlap each character span."""
    out = []
    for start, end in spans:
        hit = [i for i, (s, e) in enumerate(offsets) if e > s and s < end and e > start]
        if not hit:
            raise InputError(f"no token covers characters {start}-{end} of the prompt")
        out.append((hit[0], hit[-1] + 1))
    return out
