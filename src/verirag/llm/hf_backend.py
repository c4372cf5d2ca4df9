"""Hugging Face transformers backend: exact logprobs, teacher-forced scoring, attention weights.

    llm = TransformersLLM("HuggingFaceTB/SmolLM2-135M-Instruct")          # hub id or local folder
    llm = TransformersLLM("/models/SmolLM2-135M-Instruct.Q4_1.gguf")        # a GGUF file
    llm = TransformersLLM("/models", gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf")

GGUF files are dequantised by transformers to full precision, which is slow; the first load saves
the converted model (float32) and tokenizer with `save_pretrained` into
`cache_dir()/hf-converted/<first 16 hex of the GGUF sha256>/` ($VERIRAG_CACHE_DIR, else
~/.cache/verirag) and later loads read that folder.

Prompts: chat prompts are rendered with the tokenizer's chat template
(`apply_chat_template(add_generation_prompt=True)`). A tokenizer without a chat template (base
models) falls back, with a logged warning, to the plain "Role: content ... Assistant:" transcript of
`verirag.llm.chat_template.render_chat`, the same fallback the other backends use. String prompts
are tokenised as they are (with the tokenizer's usual special tokens, e.g. BOS).

All logprobs are the model's raw distribution: log_softmax of the logits, before any temperature
or other logits processing. Greedy decoding (temperature 0) is deterministic; sampling seeds torch.
Generation uses a clean GenerationConfig (no repetition penalty, top-k or top-p from the model's
defaults), so greedy output is the arg-max path of the reported logprobs.

Attention weights need the "eager" attention implementation: it is the default on CPU; on GPU the
faster default (sdpa) is kept and `attentions()` switches to eager for its forward pass when the
installed transformers allows it, else raises CapabilityError (load with attn_implementation="eager").
"""
from __future__ import annotations

import json
import logging
import os
import shutil
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from verirag.errors import CapabilityError, InputError, ModelNotFoundError
from verirag.llm.base import (ATTENTIONS, DEFAULT_SEED, EXACT_NEXT_TOKEN, HIDDEN_STATE, LLM, LOGPROBS,
                              NEXT_TOKEN, SCORE)
from verirag.llm.chat_template import plain_messages, render_chat, validate_messages
from verirag.llm.lookback import (LookbackRatios, LookbackSums, char_spans, ratios_from_sums,
                                  segment_sums, token_spans)
from verirag.models.cache_dir import cache_dir
from verirag.models.hashing import file_fingerprint
from verirag.types import ContinuationScore, Generation, Prompt, TokenLogprob

log = logging.getLogger(__name__)

CONVERTED_SUBDIR = "hf-converted"
PREFILL_CHUNK = 256  # prompt tokens per pass when reading attention (bounds its memory)
COMPLETE_MARKER = "verirag-converted.json"
_DTYPES = {"float32": "float32", "fp32": "float32", "float": "float32",
           "float16": "float16", "fp16": "float16", "half": "float16",
           "bfloat16": "bfloat16", "bf16": "bfloat16"}


def _import_torch():
    try:
        import torch
        import transformers
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise CapabilityError("the hf backend needs torch and transformers: "
                              "pip install 'verirag[hf]' (and torch)") from exc
    return torch, transformers


def converted_dir_for(sha256: str) -> Path:
    """Where the converted copy of a GGUF file with this sha256 lives."""
    return cache_dir() / CONVERTED_SUBDIR / sha256[:16]


class TransformersLLM(LLM):
    """A causal LM run in-process with transformers (see the module docstring)."""

    backend = "hf"

    def __init__(self, model: str | os.PathLike[str], gguf_file: str | None = None,
                 device: str | None = None, dtype: Any = None,
                 attn_implementation: str | None = None, trust_remote_code: bool = False,
                 *, revision: str | None = None):
        torch, transformers = _import_torch()
        self._torch = torch
        model = str(model)
        self.model_id = model
        self.revision = revision
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.dtype = self._resolve_dtype(dtype)
        if attn_implementation is None and self.device == "cpu":
            attn_implementation = "eager"
        self.attn_implementation = attn_implementation
        self.trust_remote_code = trust_remote_code

        # Resolve a GGUF file: `model` may be the file itself, or a folder with gguf_file in it.
        gguf_path: Path | None = None
        if gguf_file is not None:
            gguf_path = Path(gguf_file) if Path(gguf_file).is_absolute() else Path(model) / gguf_file
        elif model.lower().endswith(".gguf"):
            gguf_path = Path(model)
        if gguf_path is not None:
            gguf_path = gguf_path.expanduser()
            if not gguf_path.is_file():
                raise ModelNotFoundError(f"GGUF file not found: {gguf_path}")
            self.gguf_sha256 = file_fingerprint(gguf_path)
            self.fingerprint = self.gguf_sha256
            load_from = self._converted_gguf(gguf_path)
        else:
            self.gguf_sha256 = None
            load_from = model
            if Path(model).expanduser().exists():
                load_from = str(Path(model).expanduser())
        self.model, self.tokenizer = self._load(load_from, revision=revision)
        if gguf_path is None:
            commit = getattr(self.model.config, "_commit_hash", None)
            self.fingerprint = f"{model}@{revision or commit or 'local'}"

        cfg = self.model.config
        self.context_window = int(getattr(cfg, "max_position_embeddings", 0)
                                  or getattr(self.tokenizer, "model_max_length", 0) or 2048)
        if self.context_window > 10_000_000:  # tokenizers use a huge sentinel for "unknown"
            self.context_window = 2048
        self.capabilities = frozenset({LOGPROBS, SCORE, NEXT_TOKEN, EXACT_NEXT_TOKEN, ATTENTIONS, HIDDEN_STATE})
        self.prefill_chunk = PREFILL_CHUNK
        self._warned_no_template = False

    # ------------------------------------------------------------------ loading

    def _resolve_dtype(self, dtype: Any):
        torch = self._torch
        if dtype is None:
            if self.device.startswith("cuda"):
                return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
            return torch.float32
        if isinstance(dtype, str):
            name = _DTYPES.get(dtype.lower().replace("torch.", ""))
            if name is None:
                raise InputError(f"unknown dtype {dtype!r}; use float32, float16 or bfloat16")
            return getattr(torch, name)
        return dtype

    def _dtype_kwarg(self, dtype) -> dict[str, Any]:
        """transformers >= 4.56 calls it `dtype`; older versions `torch_dtype`."""
        import inspect

        from transformers import PreTrainedModel
        params = inspect.signature(PreTrainedModel.from_pretrained).parameters
        if "dtype" in params:
            return {"dtype": dtype}
        try:
            from packaging.version import Version
            import transformers
            if Version(transformers.__version__) >= Version("4.56"):
                return {"dtype": dtype}
        except (ImportError, ValueError):  # pragma: no cover - no packaging, or an odd version string
            pass
        return {"torch_dtype": dtype}

    def _load(self, source: str, *, revision: str | None = None, gguf_file: str | None = None,
              dtype=None, attn: str | None | bool = False):
        from transformers import AutoModelForCausalLM, AutoTokenizer
        kwargs: dict[str, Any] = {"trust_remote_code": self.trust_remote_code}
        if revision:
            kwargs["revision"] = revision
        if gguf_file:
            kwargs["gguf_file"] = gguf_file
        tokenizer = AutoTokenizer.from_pretrained(source, **kwargs)
        model_kwargs = dict(kwargs, **self._dtype_kwarg(dtype or self.dtype))
        if gguf_file:
            # transformers >= 5 can keep GGUF weights packed (GgufLinear); ask for plain tensors,
            # which is what we save and what attention/logit extraction expects.
            try:
                from transformers.utils.quantization_config import GgufConfig
            except ImportError:  # transformers 4.x always dequantises
                pass
            else:
                model_kwargs["quantization_config"] = GgufConfig(gguf_file=gguf_file,
                                                                 dequantize=True)
        attn_impl = self.attn_implementation if attn is False else attn
        if attn_impl:
            model_kwargs["attn_implementation"] = attn_impl
        try:
            model = AutoModelForCausalLM.from_pretrained(source, **model_kwargs)
        except OSError as exc:
            raise ModelNotFoundError(f"cannot load model {source!r}: {exc}") from exc
        model.to(self.device)
        model.eval()
        if tokenizer.pad_token_id is None and tokenizer.eos_token_id is not None:
            tokenizer.pad_token = tokenizer.eos_token
        return model, tokenizer

    def _converted_gguf(self, gguf_path: Path) -> str:
        """The folder with this GGUF converted to a transformers checkpoint; converts on first use."""
        target = converted_dir_for(self.gguf_sha256)
        if (target / COMPLETE_MARKER).is_file():
            return str(target)
        target.parent.mkdir(parents=True, exist_ok=True)
        from filelock import FileLock
        with FileLock(str(target) + ".lock", timeout=3600):
            if (target / COMPLETE_MARKER).is_file():  # another process converted it meanwhile
                return str(target)
            log.info("converting %s to a transformers checkpoint in %s (once)", gguf_path, target)
            model, tokenizer = self._load(str(gguf_path.parent), gguf_file=gguf_path.name,
                                          dtype=self._torch.float32, attn=None)
            quantizer = getattr(model, "hf_quantizer", None)
            if quantizer is not None:  # transformers >= 5 tags GGUF loads as "quantized"
                packed = [n for n, m in model.named_modules() if "gguf" in type(m).__name__.lower()]
                if packed:
                    raise CapabilityError(f"transformers kept {len(packed)} GGUF layers packed "
                                          f"(e.g. {packed[0]}); cannot save a converted copy")
                quantizer.remove_quantization_config(model)
            tmp = target.with_name(f"{target.name}.tmp-{os.getpid()}")
            shutil.rmtree(tmp, ignore_errors=True)
            model.to("cpu")
            model.save_pretrained(tmp)
            tokenizer.save_pretrained(tmp)
            (tmp / COMPLETE_MARKER).write_text(json.dumps(
                {"gguf": str(gguf_path), "sha256": self.gguf_sha256}, indent=1), encoding="utf-8")
            if target.exists():
                shutil.rmtree(target)
            os.replace(tmp, target)
            del model
        return str(target)

    # ------------------------------------------------------------------ prompts

    def render(self, prompt: Prompt) -> str:
        """The prompt text the model sees (chat prompts through the chat template)."""
        validate_messages(prompt)
        if isinstance(prompt, str):
            return prompt
        if getattr(self.tokenizer, "chat_template", None):
            return self.tokenizer.apply_chat_template(plain_messages(prompt), tokenize=False,
                                                      add_generation_prompt=True)
        if not self._warned_no_template:
            log.warning("%s has no chat template; rendering chat prompts as a plain "
                        "'Role: content' transcript", self.model_id)
            self._warned_no_template = True
        return render_chat(None, plain_messages(prompt))

    def _prompt_ids(self, prompt: Prompt) -> list[int]:
        text = self.render(prompt)
        # A chat template writes its own special tokens (BOS etc.); a raw string gets the usual ones.
        add_special = isinstance(prompt, str)
        ids = self.tokenizer(text, add_special_tokens=add_special)["input_ids"]
        if not ids:
            raise InputError("the prompt is empty after tokenisation")
        return list(ids)

    def _continuation_ids(self, continuation: str) -> list[int]:
        return list(self.tokenizer(continuation, add_special_tokens=False)["input_ids"])

    def _pieces(self, ids: Sequence[int], prefix: Sequence[int] = ()) -> list[str]:
        """The text each token adds, decoded in context (keeps SentencePiece spaces right)."""
        pieces = []
        ctx = list(prefix[-4:])  # a little left context is enough for decoding spaces
        prev = self.tokenizer.decode(ctx, skip_special_tokens=False) if ctx else ""
        cur_ids = list(ctx)
        for t in ids:
            cur_ids.append(int(t))
            cur = self.tokenizer.decode(cur_ids, skip_special_tokens=False)
            pieces.append(cur[len(prev):] if cur.startswith(prev) else
                          self.tokenizer.decode([int(t)], skip_special_tokens=False))
            prev = cur
        return pieces

    def _check_length(self, n_prompt: int, extra: int) -> None:
        if n_prompt + extra > self.context_window:
            raise InputError(f"prompt of {n_prompt} tokens + {extra} more exceeds the context window "
                             f"of {self.context_window} tokens of {self.model_id}")

    # ------------------------------------------------------------------ LLM operations

    def _logits(self, ids: list[int], **kwargs):
        torch = self._torch
        input_ids = torch.tensor([ids], device=self.device)
        with torch.inference_mode():
            return self.model(input_ids=input_ids, **kwargs)

    def generate(self, prompt: Prompt, *, max_tokens: int = 256, temperature: float = 0.0,
                 seed: int = DEFAULT_SEED, stop: Sequence[str] | None = None,
                 logprobs: bool = False, top_logprobs: int = 0) -> Generation:
        """Generate; stop strings end generation early and the text is cut before the first one.

        The end-of-sequence token is neither in the text nor in `tokens`.
        """
        torch = self._torch
        from transformers import GenerationConfig
        if max_tokens < 1:
            raise InputError(f"max_tokens must be >= 1, got {max_tokens}")
        ids = self._prompt_ids(prompt)
        self._check_length(len(ids), 0)
        max_new = min(int(max_tokens), max(1, self.context_window - len(ids)))
        sample = temperature > 0
        eos = self.model.generation_config.eos_token_id
        if eos is None:
            eos = self.tokenizer.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos] if eos is not None else [])
        cfg = GenerationConfig(max_new_tokens=max_new, do_sample=sample,
                               temperature=float(temperature) if sample else 1.0, top_k=None,
                               top_p=1.0, num_beams=1, eos_token_id=eos,
                               pad_token_id=self.tokenizer.pad_token_id,
                               bos_token_id=self.model.generation_config.bos_token_id,
                               output_logits=True, return_dict_in_generate=True)
        kwargs: dict[str, Any] = {}
        if stop:
            cfg.stop_strings = list(stop)
            kwargs["tokenizer"] = self.tokenizer
        if sample:
            torch.manual_seed(int(seed))
            if self.device.startswith("cuda"):
                torch.cuda.manual_seed_all(int(seed))
        input_ids = torch.tensor([ids], device=self.device)
        with torch.inference_mode():
            out = self.model.generate(input_ids=input_ids, attention_mask=torch.ones_like(input_ids),
                                      generation_config=cfg, **kwargs)
        new_ids = [int(t) for t in out.sequences[0, len(ids):].tolist()]
        finish = "length"
        if new_ids and new_ids[-1] in eos_ids:
            new_ids = new_ids[:-1]
            finish = "stop"
        pieces = self._pieces(new_ids, ids)
        full = "".join(pieces)
        text = self.tokenizer.decode(new_ids, skip_special_tokens=True)
        n_keep = len(new_ids)
        if stop:
            cut = min((full.find(s) for s in stop if s and s in full), default=-1)
            if cut >= 0:
                finish = "stop"
                pos = 0
                n_keep = 0
                for piece in pieces:  # keep the tokens that begin before the stop string
                    if pos >= cut:
                        break
                    pos += len(piece)
                    n_keep += 1
                text = self.tokenizer.decode(new_ids[:n_keep], skip_special_tokens=True)
                tcut = min((text.find(s) for s in stop if s and s in text), default=-1)
                if tcut >= 0:
                    text = text[:tcut]
                elif len(text) > cut:
                    text = text[:cut]
        tokens: list[TokenLogprob] = []
        if logprobs:
            k = max(0, int(top_logprobs))
            for i in range(n_keep):
                lp = torch.log_softmax(out.logits[i][0].float(), dim=-1)
                top = []
                if k:
                    vals, idx = torch.topk(lp, k)
                    top = [(self.tokenizer.decode([int(j)], skip_special_tokens=False), float(v))
                           for v, j in zip(vals.tolist(), idx.tolist())]
                tokens.append(TokenLogprob(token=pieces[i], logprob=float(lp[new_ids[i]]), top=top))
        return Generation(text=text, tokens=tokens, finish_reason=finish, model=self.model_id,
                          prompt_tokens=len(ids), completion_tokens=n_keep)

    def score(self, prompt: Prompt, continuation: str) -> ContinuationScore:
        """One forward pass over prompt ids + continuation ids (tokenised separately)."""
        torch = self._torch
        if not continuation:
            raise InputError("score() needs a non-empty continuation")
        p_ids = self._prompt_ids(prompt)
        c_ids = self._continuation_ids(continuation)
        if not c_ids:
            raise InputError("the continuation is empty after tokenisation")
        self._check_length(len(p_ids), len(c_ids))
        out = self._logits(p_ids + c_ids)
        logits = out.logits[0, len(p_ids) - 1: len(p_ids) + len(c_ids) - 1].float()
        lp = torch.log_softmax(logits, dim=-1)
        picked = lp.gather(1, torch.tensor(c_ids, device=lp.device)[:, None])[:, 0].tolist()
        pieces = self._pieces(c_ids, p_ids)
        return ContinuationScore(tokens=[TokenLogprob(token=t, logprob=float(v))
                                         for t, v in zip(pieces, picked)])

    def next_token_logprobs(self, prompt: Prompt, *, top_k: int = 20,
                            candidates: Sequence[str] = ()) -> dict[str, float]:
        """The top_k first reply tokens plus, exactly, the first token of each candidate."""
        torch = self._torch
        ids = self._prompt_ids(prompt)
        self._check_length(len(ids), 1)
        out = self._logits(ids)
        lp = torch.log_softmax(out.logits[0, -1].float(), dim=-1)
        result: dict[str, float] = {}
        if top_k > 0:
            vals, idx = torch.topk(lp, min(int(top_k), lp.shape[-1]))
            for v, j in zip(vals.tolist(), idx.tolist()):
                tok = self.tokenizer.decode([int(j)], skip_special_tokens=False)
                if tok not in result:  # distinct ids may decode alike (byte pieces): keep the best
                    result[tok] = float(v)
        for cand in candidates:
            c_ids = self._continuation_ids(cand)
            if not c_ids:
                continue
            tok = self.tokenizer.decode([c_ids[0]], skip_special_tokens=False)
            result.setdefault(tok, float(lp[c_ids[0]]))
        return result

    def attentions(self, prompt: Prompt, continuation: str | None = None, *,
                   layers: Sequence[int] | None = None) -> dict[str, Any]:
        """Attention weights of one forward pass over prompt (+ continuation).

        Returns {"attentions": float32 array [layers, heads, seq, seq] (row i = how token i attends
        to tokens 0..i; rows sum to 1), "tokens": token texts, "input_ids": ids,
        "continuation_start": index of the first continuation token (= seq length if none),
        "layers": the layer indices returned}. `layers` selects layers to save memory.
        """
        import numpy as np
        torch = self._torch
        p_ids = self._prompt_ids(prompt)
        c_ids = self._continuation_ids(continuation) if continuation else []
        ids = p_ids + c_ids
        self._check_length(len(ids), 0)
        with self._eager_attention():
            out = self._logits(ids, output_attentions=True)
        atts = out.attentions
        if not atts or atts[0] is None:
            raise CapabilityError(f"{self.model_id} returned no attention weights; load it with "
                                  "attn_implementation='eager'")
        chosen = list(range(len(atts))) if layers is None else [int(i) for i in layers]
        arr = torch.stack([atts[i][0].float() for i in chosen]).cpu().numpy().astype(np.float32)
        tokens = self._pieces(p_ids) + self._pieces(c_ids, p_ids)
        return {"attentions": arr, "tokens": tokens, "input_ids": ids,
                "continuation_start": len(p_ids), "layers": chosen}

    def lookback_sums(self, prompt: Prompt, continuation: str, segments: Sequence[str]) -> LookbackSums:
        """Per-segment attention sums of the answer tokens (`verirag.llm.lookback`), teacher-forced
        over prompt ids + continuation ids (tokenised separately, as `score`).

        The prompt is read into the KV cache in chunks of `prefill_chunk` tokens, then the answer
        tokens in one pass, where a forward hook on each layer's attention module reduces that
        layer's weights [heads, answer, seq] to segment sums as soon as they are computed. So the
        largest attention block alive is heads x prefill_chunk x seq, never [layers, heads, seq,
        seq] (the numbers equal a single pass's to float32 rounding, ~1e-6)."""
        import numpy as np
        torch = self._torch
        if not continuation or not continuation.strip():
            raise InputError("lookback ratios need a non-empty answer")
        text = self.render(prompt)
        enc = self.tokenizer(text, add_special_tokens=isinstance(prompt, str), return_offsets_mapping=True)
        p_ids = list(enc["input_ids"])
        spans = token_spans(enc["offset_mapping"], char_spans(text, segments))
        c_ids = self._continuation_ids(continuation)
        if not c_ids:
            raise InputError("the answer is empty after tokenisation")
        self._check_length(len(p_ids), len(c_ids))
        n_ctx, n_ans = len(p_ids), len(c_ids)
        modules = [m for name, m in self.model.named_modules() if name.endswith("self_attn")]
        if not modules:
            raise CapabilityError(f"{self.model_id}: no attention modules named *.self_attn to read")
        per_layer: list[tuple] = [None] * len(modules)  # type: ignore[list-item]

        def reducer(layer: int):
            def hook(_module, _args, output):
                weights = output[1] if isinstance(output, tuple) and len(output) > 1 else None
                if weights is None:
                    raise CapabilityError(f"{self.model_id}: the attention module returned no weights; "
                                          "load it with attn_implementation='eager'")
                rows = weights[0].double().cpu().numpy()  # [heads, answer tokens, prompt + answer]
                if rows.shape[1:] != (n_ans, n_ctx + n_ans):
                    raise CapabilityError(f"{self.model_id}: attention weights of shape {tuple(weights.shape)}, "
                                          f"expected rows for {n_ans} answer tokens over {n_ctx + n_ans}")
                per_layer[layer] = segment_sums(rows, n_ctx, spans)
            return hook

        from transformers import DynamicCache
        cache = DynamicCache()
        with self._eager_attention(), torch.inference_mode():
            # the prompt in chunks (its own attention weights are not needed), then the answer rows
            for start in range(0, n_ctx, self.prefill_chunk):
                chunk = torch.tensor([p_ids[start:start + self.prefill_chunk]], device=self.device)
                self.model.model(input_ids=chunk, past_key_values=cache, use_cache=True)
            handles = [m.register_forward_hook(reducer(i)) for i, m in enumerate(modules)]
            try:
                self.model.model(input_ids=torch.tensor([c_ids], device=self.device), past_key_values=cache,
                                 use_cache=True)  # the decoder only: no logits needed
            finally:
                for h in handles:
                    h.remove()
        return LookbackSums(context=np.stack([c for c, _, _ in per_layer]),
                            output=np.stack([o for _, o, _ in per_layer]),
                            chunks=np.stack([k for _, _, k in per_layer]),
                            n_context=n_ctx, chunk_tokens=[b - a for a, b in spans])

    def lookback_ratios(self, prompt: Prompt, continuation: str, segments: Sequence[str]) -> LookbackRatios:
        return ratios_from_sums(self.lookback_sums(prompt, continuation, segments))

    def _eager_attention(self):
        """A context in which the model computes explicit attention weights."""
        import contextlib
        current = getattr(self.model.config, "_attn_implementation", None)
        if current in (None, "eager"):
            return contextlib.nullcontext()
        setter = getattr(self.model, "set_attn_implementation", None)
        if setter is None:
            raise CapabilityError(
                f"{self.model_id} was loaded with attn_implementation={current!r}, which gives no "
                "attention weights; load it with attn_implementation='eager'")

        @contextlib.contextmanager
        def switch():
            setter("eager")
            try:
                yield
            finally:
                setter(current)
        return switch()

    def hidden_state(self, text: str) -> list[float]:
        """Mean over `text`'s tokens of the last layer's hidden state (the final norm applied, as
        the LM head reads it)."""
        if not (text or "").strip():
            raise InputError("hidden_state: the text is empty")
        ids = self.tokenizer(text, add_special_tokens=False)["input_ids"]
        self._check_length(len(ids), 0)
        out = self._logits(ids, output_hidden_states=True)
        return [float(x) for x in out.hidden_states[-1][0].float().mean(dim=0).cpu().tolist()]

    def count_tokens(self, text: str) -> int:
        return len(self.tokenizer(text, add_special_tokens=False)["input_ids"])

    def count_prompt_tokens(self, prompt: Prompt) -> int:
        return len(self._prompt_ids(prompt))

    def describe(self) -> dict[str, Any]:
        d = super().describe()
        d.update(device=self.device, dtype=str(self.dtype).replace("torch.", ""),
                 attn_implementation=getattr(self.model.config, "_attn_implementation", None))
        return d

    def close(self) -> None:
        self.model = None  # type: ignore[assignment]
        if self._torch.cuda.is_available():
            self._torch.cuda.empty_cache()
