"""The embedded default backend: a local GGUF model run by llama.cpp (llama-cpp-python).

Why our own decoding loop instead of `Llama.create_completion`: llama-cpp-python returns
per-token logprobs only when the model is built with `logits_all=True`, which computes the
output layer for every prompt position and makes requests 5-70x slower. We evaluate with
logits only for the last position, read that row after every step, and pick the token
ourselves (greedy, or seeded sampling), so logprobs and top-k cost one log-softmax per token.

Scoring a fixed continuation needs logits at each continuation position, so there (and only
there) we decode a batch with logits requested for those positions.

This module uses two private members of `llama_cpp.Llama` (`_ctx`, `_batch`); the version of
llama-cpp-python is pinned in pyproject.toml for that reason.
"""
from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from verirag.errors import BackendError, InputError, ModelNotFoundError
from verirag.llm.base import DEFAULT_SEED, EXACT_NEXT_TOKEN, LLM, LOGPROBS, NEXT_TOKEN, SCORE
from verirag.llm.chat_template import render_chat, validate_messages
from verirag.types import ContinuationScore, Generation, Prompt, TokenLogprob


def log_softmax(logits: np.ndarray) -> np.ndarray:
    """log p_i = l_i - log(sum_j exp(l_j)), computed stably in float64."""
    x = logits.astype(np.float64, copy=False)
    m = x.max()
    return x - (m + np.log(np.exp(x - m).sum()))


def top_k_indices(logprobs: np.ndarray, k: int) -> np.ndarray:
    """Indices of the k largest values, largest first (argpartition: O(V), not O(V log V))."""
    k = min(k, logprobs.shape[0])
    idx = np.argpartition(-logprobs, k - 1)[:k]
    return idx[np.argsort(-logprobs[idx], kind="stable")]


class LlamaCppLLM(LLM):
    """A GGUF model in-process. Thread-safe: one request at a time per loaded model."""

    backend = "llama_cpp"

    def __init__(self, model_path: str | os.PathLike[str], *, model_id: str | None = None,
                 fingerprint: str | None = None, n_ctx: int = 4096, n_threads: int | None = None,
                 n_batch: int = 512, n_gpu_layers: int = 0, reuse_prefix: bool = False,
                 verbose: bool = False):
        path = Path(model_path)
        if not path.is_file():
            raise ModelNotFoundError(f"GGUF model file not found: {path}")
        try:
            from llama_cpp import Llama
        except ImportError as e:  # pragma: no cover - dependency of the package
            raise BackendError("llama-cpp-python is not installed: pip install llama-cpp-python") from e
        threads = n_threads or os.cpu_count() or 1
        try:
            self.llama = Llama(model_path=str(path), n_ctx=n_ctx, n_threads=threads,
                               n_threads_batch=threads, n_batch=n_batch, n_gpu_layers=n_gpu_layers,
                               logits_all=False, verbose=verbose)
        except (ValueError, RuntimeError) as e:
            raise ModelNotFoundError(f"llama.cpp could not load {path}: {e}") from e
        self.model_path = path
        self.model_id = model_id or path.name
        self.fingerprint = fingerprint or f"{path.name}:{path.stat().st_size}"
        self.capabilities = frozenset({LOGPROBS, SCORE, NEXT_TOKEN, EXACT_NEXT_TOKEN})
        self.context_window = self.llama.n_ctx()
        self.n_vocab = self.llama.n_vocab()
        self._lock = threading.Lock()
        # Off by default: llama.cpp's logits depend slightly on how a prompt is split into
        # batches, so reusing a cached prefix can flip a near-tie between two tokens and make the
        # same request answer differently depending on the one before it. Our prompts share
        # little more than a system message, so determinism costs almost nothing.
        self.reuse_prefix = reuse_prefix
        meta = self.llama.metadata or {}
        self.chat_template = meta.get("tokenizer.chat_template")
        model = self.llama._model
        self._bos_text = model.token_get_text(model.token_bos()) if model.token_bos() >= 0 else ""
        self._eos_text = model.token_get_text(model.token_eos()) if model.token_eos() >= 0 else ""
        self._piece_cache: dict[int, bytes] = {}

    # ---- tokens -------------------------------------------------------------------------
    def render(self, prompt: Prompt) -> str:
        validate_messages(prompt)
        if isinstance(prompt, str):
            return prompt
        return render_chat(self.chat_template, prompt, bos_token=self._bos_text,
                           eos_token=self._eos_text)

    def _tokenize_prompt(self, prompt: Prompt) -> list[int]:
        text = self.render(prompt)
        # special=True: the chat template's control tokens (<|im_start|> ...) are single tokens.
        # add_bos follows the model's own metadata (llama.cpp adds BOS only if the vocab asks).
        return self.llama.tokenize(text.encode("utf-8"), add_bos=True, special=True)

    def _tokenize_continuation(self, text: str) -> list[int]:
        return self.llama.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def count_tokens(self, text: str) -> int:
        return len(self._tokenize_continuation(text))

    def count_prompt_tokens(self, prompt: Prompt) -> int:
        return len(self._tokenize_prompt(prompt))

    def piece_bytes(self, token: int) -> bytes:
        """The bytes of one token as it appears in generated text (leading space included)."""
        b = self._piece_cache.get(token)
        if b is None:
            import ctypes

            import llama_cpp
            buf = ctypes.create_string_buffer(64)
            n = llama_cpp.llama_token_to_piece(self.llama._model.vocab, token, buf, len(buf), 0, False)
            if n < 0:  # buffer too small: -n is the size needed
                buf = ctypes.create_string_buffer(-n)
                n = llama_cpp.llama_token_to_piece(self.llama._model.vocab, token, buf, len(buf), 0, False)
            b = buf.raw[:n]
            self._piece_cache[token] = b
        return b

    def piece(self, token: int) -> str:
        return self.piece_bytes(token).decode("utf-8", errors="replace")

    def _is_eog(self, token: int) -> bool:
        import llama_cpp
        return bool(llama_cpp.llama_vocab_is_eog(self.llama._model.vocab, token))

    # ---- evaluation ---------------------------------------------------------------------
    def _check_fits(self, n_prompt: int, extra: int = 1) -> None:
        if n_prompt + extra > self.context_window:
            raise InputError(
                f"prompt of {n_prompt} tokens does not fit the context window of {self.context_window} "
                f"tokens of {self.model_id} (split long passages, retrieve fewer, or raise n_ctx)")

    def _eval_prefix_reusing(self, tokens: list[int]) -> None:
        """Evaluate `tokens`; with `reuse_prefix`, keep the KV cache of the longest prefix shared
        with the last call. At least one token is always evaluated, so the logits are fresh.
        """
        llama = self.llama
        shared = 0
        limit = min(llama.n_tokens, len(tokens) - 1) if self.reuse_prefix else 0
        ids = llama.input_ids
        while shared < limit and ids[shared] == tokens[shared]:
            shared += 1
        llama.n_tokens = shared  # Llama.eval drops KV entries from n_tokens on
        llama.eval(tokens[shared:])

    def _last_logits(self) -> np.ndarray:
        ptr = self.llama._ctx.get_logits_ith(-1)
        return np.ctypeslib.as_array(ptr, shape=(self.n_vocab,)).copy()

    def _eval_all_logits(self, tokens: list[int]) -> np.ndarray:
        """Evaluate `tokens` after the current state, returning the logits of every position."""
        llama = self.llama
        ctx = llama._ctx
        ctx.kv_cache_seq_rm(-1, llama.n_tokens, -1)
        rows = []
        for i in range(0, len(tokens), llama.n_batch):
            chunk = tokens[i:i + llama.n_batch]
            n_past = llama.n_tokens
            llama._batch.set_batch(batch=chunk, n_past=n_past, logits_all=True)
            ctx.decode(llama._batch)
            rows.append(np.ctypeslib.as_array(ctx.get_logits(), shape=(len(chunk), self.n_vocab)).copy())
            llama.input_ids[n_past:n_past + len(chunk)] = chunk
            llama.n_tokens += len(chunk)
        return np.concatenate(rows, axis=0)

    def _token_logprob(self, lp: np.ndarray, token: int, top_logprobs: int) -> TokenLogprob:
        top = []
        if top_logprobs > 0:
            top = [(self.piece(int(t)), float(lp[t])) for t in top_k_indices(lp, top_logprobs)]
        return TokenLogprob(token=self.piece(token), logprob=float(lp[token]), top=top)

    # ---- the LLM interface --------------------------------------------------------------
    def generate(self, prompt: Prompt, *, max_tokens: int = 256, temperature: float = 0.0,
                 seed: int = DEFAULT_SEED, stop: Sequence[str] | None = None,
                 logprobs: bool = False, top_logprobs: int = 0) -> Generation:
        with self._lock:
            tokens = self._tokenize_prompt(prompt)
            self._check_fits(len(tokens))
            budget = min(max_tokens, self.context_window - len(tokens))
            rng = np.random.default_rng(seed)
            out_tokens: list[int] = []
            records: list[TokenLogprob] = []
            text_bytes = b""
            finish = "length"
            stop = [s for s in (stop or []) if s]
            self._eval_prefix_reusing(tokens)
            for _ in range(budget):
                logits = self._last_logits()
                if temperature <= 0:
                    token = int(np.argmax(logits))
                    lp = log_softmax(logits) if logprobs else None
                else:
                    lp = log_softmax(logits / temperature)
                    token = int(rng.choice(self.n_vocab, p=np.exp(lp)))
                    if logprobs:
                        lp = log_softmax(logits)  # report the model's own probabilities
                if self._is_eog(token):
                    finish = "stop"
                    break
                out_tokens.append(token)
                if logprobs:
                    records.append(self._token_logprob(lp, token, top_logprobs))
                text_bytes += self.piece_bytes(token)
                if stop:
                    text = text_bytes.decode("utf-8", errors="ignore")
                    if any(s in text for s in stop):
                        finish = "stop"
                        break
                self.llama.eval([token])
            text = text_bytes.decode("utf-8", errors="ignore")
            if stop:
                cut = min((text.find(s) for s in stop if s in text), default=-1)
                if cut >= 0:
                    text = text[:cut]
                    records = _trim_records(records, len(text))
            return Generation(text=text, tokens=records, finish_reason=finish, model=self.model_id,
                              prompt_tokens=len(tokens), completion_tokens=len(out_tokens))

    def score(self, prompt: Prompt, continuation: str) -> ContinuationScore:
        with self._lock:
            p = self._tokenize_prompt(prompt)
            c = self._tokenize_continuation(continuation)
            if not c:
                return ContinuationScore(tokens=[])
            self._check_fits(len(p) + len(c), extra=0)
            # Logits of position i predict token i+1: evaluate the prompt without its last token
            # (prefix reuse), then the last prompt token plus all but the last continuation token.
            if len(p) > 1:
                self._eval_prefix_reusing(p[:-1])
            else:
                self.llama.reset()
            rows = self._eval_all_logits([p[-1]] + c[:-1])
            out = []
            for row, token in zip(rows, c):
                lp = log_softmax(row)
                out.append(TokenLogprob(token=self.piece(token), logprob=float(lp[token])))
            return ContinuationScore(tokens=out)

    def next_token_logprobs(self, prompt: Prompt, *, top_k: int = 20,
                            candidates: Sequence[str] = ()) -> dict[str, float]:
        with self._lock:
            tokens = self._tokenize_prompt(prompt)
            self._check_fits(len(tokens))
            self._eval_prefix_reusing(tokens)
            lp = log_softmax(self._last_logits())
        out = {self.piece(int(t)): float(lp[t]) for t in top_k_indices(lp, top_k)} if top_k else {}
        for cand in candidates:
            for variant in (cand, " " + cand):
                ids = self._tokenize_continuation(variant)
                if ids:
                    out[self.piece(ids[0])] = float(lp[ids[0]])
        return out

    def close(self) -> None:
        llama = getattr(self, "llama", None)
        if llama is not None:
            llama.close()
            self.llama = None


def _trim_records(records: list[TokenLogprob], n_chars: int) -> list[TokenLogprob]:
    """Keep the tokens that start before character `n_chars` (the cut at a stop string)."""
    kept, pos = [], 0
    for r in records:
        if pos >= n_chars:
            break
        kept.append(r)
        pos += len(r.token)
    return kept
