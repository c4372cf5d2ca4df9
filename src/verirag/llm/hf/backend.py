"""Hugging Face transformers backend: exact logprobs, teacher-forced scoring, attention weights.

    llm = TransformersLLM("HuggingFaceTB/SmolLM2-135M-Instruct")          # hub id or local folder
    llm = TransformersLLM("/models/SmolLM2-135M-Instruct.Q4_1.gguf")        # a GGUF file (`load`)
    llm = TransformersLLM("/models", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")

The model runs on the GPU when torch sees one (else the CPU), unless `device` says otherwise.

Prompts: chat prompts are rendered with the tokenizer's chat template
(`apply_chat_template(add_generation_prompt=True)`). A tokenizer without a chat template (base
models) falls back, with a logged warning, to the plain "Role: content ... Assistant:" transcript of
`verirag.llm.chat_template.render_chat`, the same fallback the other backends use. String prompts
are tokenised as they are (with the tokenizer's usual special tokens, e.g. BOS).

All logprobs are the model's raw distribution: log_softmax of the logits, before any temperature
or other logits processing. Greedy decoding (temperature 0) is deterministic; sampling seeds torch.
Generation uses a clean GenerationConfig (no repetition penalty, top-k or top-p from the model's
defaults), so greedy output is the arg-max path of the reported logprobs.

Attention weights: `verirag.llm.hf.attention`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Sequence
from dataclasses import astuple
from pathlib import Path
from typing import Any

from verirag.errors import InputError
from verirag.llm.base import (
    ATTENTIONS,
    EXACT_NEXT_TOKEN,
    HIDDEN_STATE,
    LLM,
    LOGPROBS,
    NEXT_TOKEN,
    SCORE,
    GenerateOptions,
)
from verirag.llm.chat_template import plain_messages, render_chat, validate_messages
from verirag.llm.hf.attention import AttentionReader
from verirag.llm.hf.load import converted_gguf, gguf_path_of, import_torch, load_checkpoint, resolve_dtype
from verirag.models.hashing import file_fingerprint
from verirag.types import ContinuationScore, Generation, Prompt, TokenLogprob

log = logging.getLogger(__name__)

PREFILL_CHUNK = 256  # prompt tokens per pass when reading attention (bounds its memory)


class TransformersLLM(AttentionReader, LLM):
    """A causal LM run in-process with transformers (see the module docstring)."""

    backend = "hf"

    def __init__(
        self,
        model: str | os.PathLike[str],
        gguf_file: str | None = None,
        device: str | None = None,
        dtype: Any = None,
        attn_implementation: str | None = None,
        trust_remote_code: bool = False,
        *,
        revision: str | None = None,
    ):
        self.torch, _ = import_torch()
        model = str(model)
        self.model_id = model
        self.revision = revision
        self.device = device or ("cuda" if self.torch.cuda.is_available() else "cpu")
        self.dtype = resolve_dtype(dtype, self.device)
        if attn_implementation is None and self.device == "cpu":
            attn_implementation = "eager"
        self.attn_implementation = attn_implementation
        self.trust_remote_code = trust_remote_code

        gguf_path = gguf_path_of(model, gguf_file)
        if gguf_path is not None:
            self.gguf_sha256 = file_fingerprint(gguf_path)
            self.fingerprint = self.gguf_sha256
            load_from = converted_gguf(gguf_path, self.gguf_sha256, trust_remote_code=trust_remote_code)
        else:
            self.gguf_sha256 = None
            load_from = model
            if Path(model).expanduser().exists():
                load_from = str(Path(model).expanduser())
        self.model, self.tokenizer = load_checkpoint(
            load_from,
            device=self.device,
            dtype=self.dtype,
            attn_implementation=attn_implementation,
            trust_remote_code=trust_remote_code,
            revision=revision,
        )
        if gguf_path is None:
            commit = getattr(self.model.config, "_commit_hash", None)
            self.fingerprint = f"{model}@{revision or commit or 'local'}"

        cfg = self.model.config
        self.context_window = int(
            getattr(cfg, "max_position_embeddings", 0) or getattr(self.tokenizer, "model_max_length", 0) or 2048
        )
        if self.context_window > 10_000_000:  # tokenizers use a huge sentinel for "unknown"
            self.context_window = 2048
        self.capabilities = frozenset({LOGPROBS, SCORE, NEXT_TOKEN, EXACT_NEXT_TOKEN, ATTENTIONS, HIDDEN_STATE})
        self.logprobs_assured = True
        self.prefill_chunk = PREFILL_CHUNK
        self._warned_no_template = False

    # ------------------------------------------------------------------ prompts and tokens

    def render(self, prompt: Prompt) -> str:
        """The prompt text the model sees (chat prompts through the chat template)."""
        validate_messages(prompt)
        if isinstance(prompt, str):
            return prompt
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(
                plain_messages(prompt), tokenize=False, add_generation_prompt=True
            )
        if not self._warned_no_template:
            log.warning(
                "%s has no chat template; rendering chat prompts as a plain 'Role: content' transcript", self.model_id
            )
            self._warned_no_template = True
        return render_chat(None, plain_messages(prompt))

    def prompt_ids(self, prompt: Prompt) -> list[int]:
        text = self.render(prompt)
        # A chat template writes its own special tokens (BOS etc.); a raw string gets the usual ones.
        add_special = isinstance(prompt, str)
        ids = self.tokenizer(text, add_special_tokens=add_special)["input_ids"]
        if not ids:
            raise InputError("the prompt is empty after tokenisation")
        return list(ids)

    def continuation_ids(self, continuation: str) -> list[int]:
        return list(self.tokenizer(continuation, add_special_tokens=False)["input_ids"])

    def pieces(self, ids: Sequence[int], prefix: Sequence[int] = ()) -> list[str]:
        """The text each token adds, decoded in context (keeps SentencePiece spaces right)."""
        pieces = []
        ctx = list(prefix[-4:])  # a little left context is enough for decoding spaces
        prev = self.tokenizer.decode(ctx, skip_special_tokens=False) if ctx else ""
        cur_ids = list(ctx)
        for t in ids:
            cur_ids.append(int(t))
            cur = self.tokenizer.decode(cur_ids, skip_special_tokens=False)
            pieces.append(
                cur[len(prev) :] if cur.startswith(prev) else self.tokenizer.decode([int(t)], skip_special_tokens=False)
            )
            prev = cur
        return pieces

    def check_length(self, n_prompt: int, extra: int) -> None:
        if n_prompt + extra > self.context_window:
            raise InputError(
                f"prompt of {n_prompt} tokens + {extra} more exceeds the context window "
                f"of {self.context_window} tokens of {self.model_id}"
            )

    def forward(self, ids: list[int], **kwargs):
        """One forward pass of the whole model over `ids` (no gradients)."""
        torch = self.torch
        input_ids = torch.tensor([ids], device=self.device)
        with torch.inference_mode():
            return self.model(input_ids=input_ids, **kwargs)

    # ------------------------------------------------------------------ LLM operations

    def _generate(self, prompt: Prompt, options: GenerateOptions) -> Generation:
        """Generate; stop strings end generation early and the text is cut before the first one.

        The end-of-sequence token is neither in the text nor in `tokens`.
        """
        max_tokens, temperature, seed, stop, logprobs, top_logprobs = astuple(options)
        torch = self.torch
        ids = self.prompt_ids(prompt)
        self.check_length(len(ids), 0)
        max_new = min(int(max_tokens), max(1, self.context_window - len(ids)))
        cfg, eos_ids = self._generation_config(max_new, temperature)
        kwargs: dict[str, Any] = {}
        if stop:
            cfg.stop_strings = list(stop)
            kwargs["tokenizer"] = self.tokenizer
        if temperature > 0:
            torch.manual_seed(int(seed))
            if self.device.startswith("cuda"):
                torch.cuda.manual_seed_all(int(seed))
        input_ids = torch.tensor([ids], device=self.device)
        with torch.inference_mode():
            out = self.model.generate(
                input_ids=input_ids, attention_mask=torch.ones_like(input_ids), generation_config=cfg, **kwargs
            )
        new_ids = [int(t) for t in out.sequences[0, len(ids) :].tolist()]
        finish = "length"
        if new_ids and new_ids[-1] in eos_ids:
            new_ids = new_ids[:-1]
            finish = "stop"
        pieces = self.pieces(new_ids, ids)
        text, n_keep, stopped = self._cut_at_stop(new_ids, pieces, stop)
        tokens = self._token_logprobs(out.logits, new_ids, pieces, n_keep, top_logprobs) if logprobs else []
        return Generation(
            text=text,
            tokens=tokens,
            finish_reason="stop" if stopped else finish,
            model=self.model_id,
            prompt_tokens=len(ids),
            completion_tokens=n_keep,
        )

    def _generation_config(self, max_new: int, temperature: float):
        """(transformers' GenerationConfig for greedy or sampled decoding, the end-of-sequence ids)."""
        from transformers import GenerationConfig

        sample = temperature > 0
        eos = self.model.generation_config.eos_token_id
        if eos is None:
            eos = self.tokenizer.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        cfg = GenerationConfig(
            max_new_tokens=max_new,
            do_sample=sample,
            temperature=float(temperature) if sample else 1.0,
            top_k=None,
            top_p=1.0,
            num_beams=1,
            eos_token_id=eos,
            pad_token_id=self.tokenizer.pad_token_id,
            bos_token_id=self.model.generation_config.bos_token_id,
            output_logits=True,
            return_dict_in_generate=True,
        )
        return cfg, eos_ids

    def _cut_at_stop(self, new_ids: list[int], pieces: list[str], stop: Sequence[str] | None) -> tuple[str, int, bool]:
        """(the text, the tokens kept, whether a stop string ended it): the tokens that begin before
        the first stop string are kept, and the text is cut before it."""
        text = self.tokenizer.decode(new_ids, skip_special_tokens=True)
        full = "".join(pieces)
        cut = min((full.find(s) for s in stop or () if s and s in full), default=-1)
        if cut < 0:
            return text, len(new_ids), False
        pos = n_keep = 0
        for piece in pieces:  # keep the tokens that begin before the stop string
            if pos >= cut:
                break
            pos += len(piece)
            n_keep += 1
        text = self.tokenizer.decode(new_ids[:n_keep], skip_special_tokens=True)
        tcut = min((text.find(s) for s in stop or () if s and s in text), default=-1)
        if tcut >= 0:
            text = text[:tcut]
        elif len(text) > cut:
            text = text[:cut]
        return text, n_keep, True

    def _token_logprobs(self, logits, new_ids: list[int], pieces: list[str], n_keep: int, top_logprobs: int):
        """Each kept token's logprob and its `top_logprobs` alternatives, from the step logits."""
        torch = self.torch
        k = max(0, int(top_logprobs))
        tokens: list[TokenLogprob] = []
        for i in range(n_keep):
            lp = torch.log_softmax(logits[i][0].float(), dim=-1)
            top = []
            if k:
                vals, idx = torch.topk(lp, k)
                top = [
                    (self.tokenizer.decode([int(j)], skip_special_tokens=False), float(v))
                    for v, j in zip(vals.tolist(), idx.tolist())
                ]
            tokens.append(TokenLogprob(token=pieces[i], logprob=float(lp[new_ids[i]]), top=top))
        return tokens

    def score(self, prompt: Prompt, continuation: str) -> ContinuationScore:
        """One forward pass over prompt ids + continuation ids (tokenised separately)."""
        torch = self.torch
        if not continuation:
            raise InputError("score() needs a non-empty continuation")
        p_ids = self.prompt_ids(prompt)
        c_ids = self.continuation_ids(continuation)
        if not c_ids:
            raise InputError("the continuation is empty after tokenisation")
        self.check_length(len(p_ids), len(c_ids))
        out = self.forward(p_ids + c_ids)
        logits = out.logits[0, len(p_ids) - 1 : len(p_ids) + len(c_ids) - 1].float()
        lp = torch.log_softmax(logits, dim=-1)
        picked = lp.gather(1, torch.tensor(c_ids, device=lp.device)[:, None])[:, 0].tolist()
        pieces = self.pieces(c_ids, p_ids)
        return ContinuationScore(tokens=[TokenLogprob(token=t, logprob=float(v)) for t, v in zip(pieces, picked)])

    def next_token_logprobs(
        self, prompt: Prompt, *, top_k: int = 20, candidates: Sequence[str] = ()
    ) -> dict[str, float]:
        """The top_k first reply tokens plus, exactly, the first token of each candidate."""
        torch = self.torch
        ids = self.prompt_ids(prompt)
        self.check_length(len(ids), 1)
        out = self.forward(ids)
        lp = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
        result: dict[str, float] = {}
        if top_k > 0:
            vals, idx = torch.topk(lp, min(int(top_k), lp.shape[-1]))
            for v, j in zip(vals.tolist(), idx.tolist()):
                tok = self.tokenizer.decode([int(j)], skip_special_tokens=False)
                if tok not in result:  # distinct ids may decode alike (byte pieces): keep the best
                    result[tok] = float(v)
        for cand in candidates:
            c_ids = self.continuation_ids(cand)
            if not c_ids:
                continue
            tok = self.tokenizer.decode([c_ids[0]], skip_special_tokens=False)
            result.setdefault(tok, float(lp[c_ids[0]]))
        return result

    def hidden_state(self, text: str) -> list[float]:
        """Mean over `text`'s tokens of the last layer's hidden state (the final norm applied, as
        the LM head reads it)."""
        if not (text or "").strip():
            raise InputError("hidden_state: the text is empty")
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        self.check_length(len(ids), 0)
        out = self.forward(ids, output_hidden_states=True)
        return [float(x) for x in out.hidden_states[-1][0].float().mean(dim=0).cpu().tolist()]

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def count_prompt_tokens(self, prompt: Prompt) -> int:
        return len(self.prompt_ids(prompt))

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d.update(
            device=self.device,
            dtype=str(self.dtype).replace("torch.", ""),
            attn_implementation=getattr(self.model.config, "_attn_implementation", None),
        )
        return d

    def close(self) -> None:
        self.model = None  # type: ignore[assignment]
        if self.torch.cuda.is_available():
            self.torch.cuda.empty_cache()
