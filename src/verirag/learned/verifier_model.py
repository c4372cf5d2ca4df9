"""The trained verifier's network: a packaged sentence encoder read as a cross-encoder, with a
linear head over the mean of its last layer (the pooling the sentence encoders were trained with).

Only the top `train_layers` transformer layers and the head are trained; the rest stays the
packaged encoder's, so what is saved (the "adapter") is those layers and the head, in fp16: about
3.5 MB for one MiniLM-L6 layer, where the whole encoder is 90 MB. With `lora_rank`, those layers
keep their weights and learn low-rank updates instead (LoRA, through peft): every layer of
MiniLM-L6 at rank 16 is 1.3 MB.

Imported lazily (torch takes seconds to import).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path

import torch

from verirag.errors import InputError, ModelNotFoundError

HEAD = "head."


class PairScorer(torch.nn.Module):
    """logit(claim, chunk) = w . mean_pool(encoder(claim [SEP] chunk)) + b."""

    def __init__(self, encoder):
        super().__init__()
        self.encoder = encoder
        self.head = torch.nn.Linear(encoder.config.hidden_size, 1)
        torch.nn.init.normal_(self.head.weight, std=0.02)
        torch.nn.init.zeros_(self.head.bias)

    def forward(self, input_ids, attention_mask, token_type_ids=None):
        kwargs = {"token_type_ids": token_type_ids} if token_type_ids is not None else {}
        hidden = self.encoder(input_ids=input_ids, attention_mask=attention_mask, **kwargs).last_hidden_state
        return self.pool_and_score(hidden, attention_mask)

    def pool_and_score(self, hidden, attention_mask):
        mask = attention_mask.unsqueeze(-1).to(hidden.dtype)
        pooled = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1.0)
        return self.head(pooled).squeeze(-1)


class _Passthrough(torch.nn.Module):
    """Stands in for the embeddings when the input is already a layer's hidden states."""

    def forward(self, input_ids=None, inputs_embeds=None, **kwargs):
        return inputs_embeds


@contextmanager
def _only_layers(encoder, start: int, stop: int, from_hidden: bool) -> Iterator[None]:
    """Run `encoder` through its layers [start, stop) only (from hidden states when `from_hidden`:
    the embeddings are skipped), the library's own mask handling kept."""
    layers, embeddings = encoder.encoder.layer, encoder.embeddings
    encoder.encoder.layer = torch.nn.ModuleList(list(layers)[start:stop])
    if from_hidden:
        encoder.embeddings = _Passthrough()
    try:
        yield
    finally:
        encoder.encoder.layer, encoder.embeddings = layers, embeddings


def frozen_states(
    scorer: PairScorer, tokenizer, claims: list[str], chunks: list[str], window: int, train_layers: int
) -> list[torch.Tensor]:
    """Per pair, the hidden states that enter the top `train_layers` layers ([tokens, hidden],
    fp16, padding dropped): they do not change while only the top layers learn, so training
    computes them once instead of every epoch (`top_logits` goes on from them)."""
    device = next(scorer.parameters()).device
    enc = tokenizer(claims, chunks, padding=True, truncation="only_second", max_length=window, return_tensors="pt").to(
        device
    )
    n = layer_count(scorer)
    with torch.inference_mode(), _only_layers(scorer.encoder, 0, n - train_layers, from_hidden=False):
        hidden = scorer.encoder(**enc).last_hidden_state
    lengths = enc["attention_mask"].sum(1).tolist()
    return [hidden[i, : int(k)].to(torch.float16).clone() for i, k in enumerate(lengths)]


def padded_states(scorer: PairScorer, states: Sequence[torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
    """Stored hidden states of unequal lengths as one zero-padded batch on the scorer's device, and
    its attention mask."""
    device = next(scorer.parameters()).device
    longest = max(len(s) for s in states)
    hidden = torch.zeros(len(states), longest, states[0].shape[-1], device=device)
    mask = torch.zeros(len(states), longest, dtype=torch.long, device=device)
    for i, s in enumerate(states):
        hidden[i, : len(s)] = s.float()
        mask[i, : len(s)] = 1
    return hidden, mask


def top_logits(scorer: PairScorer, states: Sequence[torch.Tensor], train_layers: int) -> torch.Tensor:
    """Pair logits from `frozen_states`: the top `train_layers` layers, the pooling and the head
    (with gradients when the caller is not in inference mode)."""
    hidden, mask = padded_states(scorer, states)
    n = layer_count(scorer)
    with _only_layers(scorer.encoder, n - train_layers, n, from_hidden=True):
        out = scorer.encoder(inputs_embeds=hidden, attention_mask=mask).last_hidden_state
    return scorer.pool_and_score(out, mask)


def load_scorer(encoder_dir: str | Path, device: str = "cpu") -> tuple[PairScorer, object]:
    """(scorer with a fresh head, tokenizer) over the encoder folder (a sentence-transformers
    folder holds the transformer at its root)."""
    from transformers import AutoModel, AutoTokenizer
    from transformers.utils import logging as hf_logging

    level = hf_logging.get_verbosity()
    hf_logging.set_verbosity_error()  # "pooler weights newly initialised": unused here
    hf_logging.disable_progress_bar()
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(encoder_dir))
        encoder = AutoModel.from_pretrained(str(encoder_dir))
    except (OSError, ValueError) as e:
        raise ModelNotFoundError(f"cannot load the verifier's encoder {encoder_dir} ({type(e).__name__}: {e})") from e
    finally:
        hf_logging.set_verbosity(level)
    return PairScorer(encoder).to(device), tokenizer


LORA_TARGETS = ("query", "key", "value", "dense")  # a BERT layer's attention and feed-forward
LORA_SCALE = 2  # alpha / rank, the usual scale
_LAYER = re.compile(r"(?:^|\.)layers?\.(\d+)\.")


def _in_top_layers(name: str, top: set[str]) -> bool:
    """Whether parameter `name` belongs to one of the encoder's layers numbered in `top`."""
    m = _LAYER.search(name)
    return m is not None and m.group(1) in top and "encoder." in name


def _top(scorer: PairScorer, train_layers: int) -> set[str]:
    n = layer_count(scorer)
    return {str(i) for i in range(n - train_layers, n)}


def add_lora(scorer: PairScorer, train_layers: int, rank: int) -> None:
    """Put LoRA updates of `rank` (alpha = LORA_SCALE x rank) into every linear map of
    the top `train_layers` layers, in place; they start at zero, so the encoder is unchanged."""
    from peft import LoraConfig, inject_adapter_in_model

    n = layer_count(scorer)
    if not 1 <= train_layers <= n or rank < 1:
        raise InputError(f"LoRA needs a rank of at least 1 and 1 to {n} layers, got rank {rank}, {train_layers} layers")
    config = LoraConfig(
        r=rank,
        lora_alpha=LORA_SCALE * rank,
        lora_dropout=0.0,
        target_modules=list(LORA_TARGETS),
        layers_to_transform=list(range(n - train_layers, n)),
        layers_pattern="layer",
    )
    inject_adapter_in_model(config, scorer.encoder)


def compress_update(scorer: PairScorer, before: dict[str, torch.Tensor], train_layers: int, rank: int) -> list[str]:
    """Store a full fine-tuning's update in a small adapter: each linear map's update (its weights
    now minus `before`) becomes its best rank-`rank` approximation (truncated SVD), held as LoRA
    factors (`add_lora`) over the encoder's own weights; biases and LayerNorms keep their update in
    full (they are small). The names the adapter then holds."""
    params = dict(scorer.named_parameters())
    linear = [n for n in before if n.endswith(".weight") and params[n].dim() == 2 and not n.startswith(HEAD)]
    with torch.no_grad():
        updates = {n: params[n].detach().float() - before[n].float() for n in linear}
        for n in linear:
            params[n].copy_(before[n])
    add_lora(scorer, train_layers, rank)
    params = dict(scorer.named_parameters())
    with torch.no_grad():
        for n, d in updates.items():
            u, s, vh = torch.linalg.svd(d, full_matrices=False)
            root = s[:rank].sqrt()
            stem = n.removesuffix(".weight")
            params[f"{stem}.lora_B.default.weight"].copy_(u[:, :rank] * root / LORA_SCALE)
            params[f"{stem}.lora_A.default.weight"].copy_(root[:, None] * vh[:rank])
    top = _top(scorer, train_layers)
    return [
        name
        for name in params
        if name.startswith(HEAD)
        or (_in_top_layers(name, top) and ("lora_" in name or name.endswith(".bias") or "LayerNorm" in name))
    ]


def merge_lora(scorer: PairScorer) -> None:
    """Fold every LoRA update into the weight it updates, for scoring: the same function, one matrix
    product per linear map instead of three (about 20% of a verifier's time). The factors stay as
    parameters, so what is saved does not change."""
    from peft.tuners.lora.layer import LoraLayer

    for module in scorer.modules():
        if isinstance(module, LoraLayer) and not module.merged:
            module.merge()


def layer_count(scorer: PairScorer) -> int:
    return int(scorer.encoder.config.num_hidden_layers)


def select_trainable(scorer: PairScorer, train_layers: int, lora: bool = False) -> list[str]:
    """Freeze everything but the top `train_layers` layers (their LoRA updates only, with `lora`)
    and the head; their parameter names."""
    n = layer_count(scorer)
    if not 0 <= train_layers <= n:
        raise InputError(f"train_layers must be between 0 and {n} (the encoder's layers), got {train_layers}")
    top = _top(scorer, train_layers)
    names = []
    for name, p in scorer.named_parameters():
        keep = name.startswith(HEAD) or (_in_top_layers(name, top) and (not lora or "lora_" in name))
        p.requires_grad_(keep)
        if keep:
            names.append(name)
    return names


def round_to_fp16(scorer: PairScorer, names: list[str]) -> None:
    """Make the trained weights exactly what their fp16 copy holds, so a saved and reloaded
    verifier scores as the one in memory."""
    params = dict(scorer.named_parameters())
    with torch.no_grad():
        for n in names:
            params[n].copy_(params[n].half().float())


def save_adapter(scorer: PairScorer, names: list[str], path: Path) -> None:
    from safetensors.torch import save_file

    params = dict(scorer.named_parameters())
    save_file({n: params[n].detach().half().contiguous().cpu() for n in names}, str(path))


def load_adapter(scorer: PairScorer, path: Path) -> list[str]:
    """Put the adapter's weights into `scorer`; the names it held."""
    from safetensors.torch import load_file

    tensors = load_file(str(path))
    params = dict(scorer.named_parameters())
    unknown = sorted(set(tensors) - set(params))
    if unknown:
        raise InputError(
            f"{path}: weights {', '.join(unknown[:3])} are not in the encoder: it was trained over another encoder"
        )
    with torch.no_grad():
        for n, t in tensors.items():
            if params[n].shape != t.shape:
                raise InputError(f"{path}: {n} has shape {tuple(t.shape)}, the encoder's {tuple(params[n].shape)}")
            params[n].copy_(t.float())
    return sorted(tensors)


def logits(
    scorer: PairScorer, tokenizer, claims: list[str], chunks: list[str], window: int, grad: bool = False
) -> torch.Tensor:
    """One batch of pair logits. Chunks are sized to fit (`verifier_inputs`); truncation of the
    chunk is only a guard for a single word longer than the window."""
    device = next(scorer.parameters()).device
    enc = tokenizer(claims, chunks, padding=True, truncation="only_second", max_length=window, return_tensors="pt").to(
        device
    )
    if grad:
        return scorer(**enc)
    with torch.inference_mode():
        return scorer(**enc)


def sorted_pair_logits(
    scorer: PairScorer, tokenizer, claims: Sequence[str], chunks: Sequence[str], window: int, batch_tokens: int
) -> torch.Tensor:
    """The logits of many (claim, chunk) pairs, in input order: every pair tokenized once, sorted by
    its token count, and read in batches padded only to their own longest pair (dynamic padding), each
    batch at most `batch_tokens` tokens (padding included) so that long pairs come fewer at a time.
    Pairs of many answers are read together: what one answer's few pairs would waste on padding and
    per-call overhead is shared. The same function as `logits`, batch by batch (the padding is masked)."""
    if not claims:
        return torch.zeros(0)
    device = next(scorer.parameters()).device
    enc = tokenizer(list(claims), list(chunks), truncation="only_second", max_length=window, verbose=False)
    ids, types = enc["input_ids"], enc.get("token_type_ids")
    order = sorted(range(len(ids)), key=lambda i: len(ids[i]))
    pad = tokenizer.pad_token_id or 0
    out = torch.zeros(len(ids))
    start = 0
    scorer.eval()
    with torch.inference_mode():
        while start < len(order):
            # sorted ascending: the batch's last pair is its longest, so its length times the count bounds it
            stop = start + 1
            while stop < len(order) and len(ids[order[stop]]) * (stop + 1 - start) <= batch_tokens:
                stop += 1
            idx = order[start:stop]
            longest = len(ids[idx[-1]])
            input_ids = torch.full((len(idx), longest), pad, dtype=torch.long)
            mask = torch.zeros((len(idx), longest), dtype=torch.long)
            token_types = torch.zeros((len(idx), longest), dtype=torch.long) if types is not None else None
            for row, i in enumerate(idx):
                n = len(ids[i])
                input_ids[row, :n] = torch.tensor(ids[i])
                mask[row, :n] = 1
                if token_types is not None:
                    token_types[row, :n] = torch.tensor(types[i])
            z = scorer(
                input_ids.to(device),
                mask.to(device),
                None if token_types is None else token_types.to(device),
            )
            out[torch.tensor(idx)] = z.float().cpu()
            start = stop
    return out
