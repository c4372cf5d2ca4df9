"""The context pruner's network: the verifier's cross-encoder (`verifier_model.PairScorer`: the
packaged sentence encoder and a linear head) read once per (question, window), with the head applied
to the mean of each sentence's tokens instead of the whole pair's, so that one pass scores every
sentence of the window (Provence's one-pass labelling, pooled per sentence).

Imported lazily (torch takes seconds to import).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch

from verirag.learned.pruner_inputs import Window
from verirag.learned.verifier_model import PairScorer, _only_layers, layer_count, padded_states


def span_tokens(tokenizer, windows: Sequence[Window], max_length: int) -> list[list[list[int]]]:
    """Per window, per span: the token positions of that span's characters in the encoded pair
    (the same encoding `frozen_states` and `hidden_states` make; padding on the right)."""
    out = []
    for w in windows:
        enc = tokenizer(
            w.question, w.text, truncation="only_second", max_length=max_length, return_offsets_mapping=True
        )
        seq, offsets = enc.sequence_ids(), enc["offset_mapping"]
        rows = []
        for s, e in w.spans:
            toks = [t for t, sid in enumerate(seq) if sid == 1 and offsets[t][0] < e and offsets[t][1] > s]
            rows.append(toks or [0])  # a span the tokenizer gave no token (cannot happen for text): the [CLS]
        out.append(rows)
    return out


def encode(tokenizer, windows: Sequence[Window], max_length: int, device) -> dict:
    return tokenizer(
        [w.question for w in windows],
        [w.text for w in windows],
        padding=True,
        truncation="only_second",
        max_length=max_length,
        return_tensors="pt",
    ).to(device)


def lower_states(scorer: PairScorer, tokenizer, windows: Sequence[Window], max_length: int, stop: int):
    """Per window, the hidden states after the encoder's first `stop` layers ([tokens, hidden],
    fp16, padding dropped): fixed while only the layers above learn, so training computes them once."""
    device = next(scorer.parameters()).device
    enc = encode(tokenizer, windows, max_length, device)
    with torch.inference_mode(), _only_layers(scorer.encoder, 0, stop, from_hidden=False):
        hidden = scorer.encoder(**enc).last_hidden_state
    lengths = enc["attention_mask"].sum(1).tolist()
    return [hidden[i, : int(k)].to(torch.float16).clone() for i, k in enumerate(lengths)]


def upper_hidden(scorer: PairScorer, states: Sequence[torch.Tensor], start: int) -> torch.Tensor:
    """The last layer's hidden states from `lower_states` taken after layer `start`."""
    hidden, mask = padded_states(scorer, states)
    with _only_layers(scorer.encoder, start, layer_count(scorer), from_hidden=True):
        return scorer.encoder(inputs_embeds=hidden, attention_mask=mask).last_hidden_state


def full_hidden(scorer: PairScorer, tokenizer, windows: Sequence[Window], max_length: int) -> torch.Tensor:
    device = next(scorer.parameters()).device
    enc = encode(tokenizer, windows, max_length, device)
    return scorer.encoder(**enc).last_hidden_state


def span_logits(scorer: PairScorer, hidden: torch.Tensor, spans: Sequence[Sequence[Sequence[int]]]) -> torch.Tensor:
    """One logit per span, in window order: the head over the mean of the span's tokens."""
    pooled = [hidden[b, toks].mean(0) for b, rows in enumerate(spans) for toks in rows]
    return scorer.head(torch.stack(pooled)).squeeze(-1)
