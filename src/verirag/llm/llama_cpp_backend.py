"""The embedded default backend: a local GGUF model run by llama.cpp (llama-cpp-python).

Why our own decoding loop instead of `Llama.create_completion`: llama-cpp-python returns
per-token logprobs only when the model is built with `logits_all=True`, which computes the
output layer for every prompt position and makes requests 5-70x slower. We evaluate with
logits only for the last position, read that row after every step, and pick the token
ourselves (greedy, or seeded sampling), so logprobs and top-k cost one log-softmax per token.

Scoring a fixed continuation needs logits at each continuation position, so there (and only
there) we decode a batch with logits requested for those positions.

Prefix reuse (on by default; `reuse_prefix=False` or VERIRAG_PREFIX_REUSE=0 turns it off) keeps
the KV cache of earlier requests, the live one and an LRU of saved sequence states within
`prefix_cache_mb` (VERIRAG_PREFIX_CACHE_MB), and reuses it only for the decode batches a request's
canonical path shares exactly with theirs (`verirag.llm.prefix_store`), so logits are bitwise
those of a fresh evaluation and a request pays only for its new batches.

A chat prompt may continue an earlier generation: an assistant message carrying the generated
`token_ids` is read on the generation's own path (the prompt in batches, then those ids one at a
time, exactly as decoding evaluated them), so a follow-up question after an answer costs only its
new tokens when the generation's state is live or saved, and is replayed on the same path when it
is not (the answer came from the request cache, or was evicted): a score never depends on what
happened to be cached.

The llama.cpp build that runs the model is an engine (`verirag.llm.llama_engine`): llama-cpp-python
by default, ik_llama.cpp with VERIRAG_LLAMA_ENGINE=ik (or `engine="ik"`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from dataclasses import astuple
from pathlib import Path

import numpy as np

from verirag.errors import InputError, ModelNotFoundError
from verirag.llm.base import (
    EXACT_NEXT_TOKEN,
    HIDDEN_STATE,
    LLM,
    LOGPROBS,
    NEXT_TOKEN,
    SCORE,
    GenerateOptions,
)
from verirag.llm.chat_template import continued_message, plain_messages, render_chat, validate_messages
from verirag.llm.llama_engine import engine_name, open_engine
from verirag.llm.prefix_store import Chunk, PrefixStore, batched, n_tokens, shared_chunks, singles
from verirag.settings import settings
from verirag.types import ContinuationScore, Generation, Prompt, TokenLogprob

# Shorter contexts are cheaper to recompute than to save and restore.
MIN_SAVED_TOKENS = 64
# Prefix reuse is exact only at whole decode batches, so the batch is the grain of reuse: at 64
# tokens a shared prefix loses at most 63 tokens. Reading a prompt in batches of 64 is no slower on
# a CPU (benchmarks/bench_prompt_batch.py, 2 cores: qwen2.5-0.5b 1.24x the tokens/s of 512,
# qwen2.5-1.5b 1.00x). Logits depend on the batching, so n_batch is part of the fingerprint.
DEFAULT_N_BATCH = 64


# Tokens a hidden-state request reads at once (a passage and its question fit easily).
EMBED_CTX = 1024


def reuse_default() -> bool:
    return settings().prefix_reuse


def n_batch_default() -> int:
    return settings().n_batch


def prefix_cache_mb_default() -> float:
    return settings().prefix_cache_mb


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


def threads_from_env() -> int | None:
    """VERIRAG_THREADS: llama.cpp threads for every model this process loads without an explicit
    count (on a machine other jobs keep busy, fewer threads than cores can be much faster)."""
    return settings().threads


class LlamaCppLLM(LLM):
    """A GGUF model in-process. Thread-safe: one request at a time per loaded model."""

    backend = "llama_cpp"

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        model_id: str | None = None,
        fingerprint: str | None = None,
        n_ctx: int = 4096,
        n_threads: int | None = None,
        n_batch: int | None = None,
        n_gpu_layers: int = 0,
        reuse_prefix: bool | None = None,
        prefix_cache_mb: float | None = None,
        engine: str | None = None,
        verbose: bool = False,
    ):
        path = Path(model_path)
        if not path.is_file():
            raise ModelNotFoundError(f"GGUF model file not found: {path}")
        engine = engine_name(engine)  # env VERIRAG_LLAMA_ENGINE
        threads = n_threads or threads_from_env() or os.cpu_count() or 1
        n_batch = n_batch_default() if n_batch is None else int(n_batch)  # env VERIRAG_N_BATCH
        if n_batch < 1:
            raise InputError(f"n_batch must be a positive number of tokens, got {n_batch}")
        try:
            self.engine = open_engine(
                engine,
                str(path),
                n_ctx=n_ctx,
                n_threads=threads,
                n_batch=n_batch,
                n_gpu_layers=n_gpu_layers,
                verbose=verbose,
            )
        except (ValueError, RuntimeError) as e:
            raise ModelNotFoundError(f"llama.cpp could not load {path}: {e}") from e
        self.llama = getattr(self.engine, "llama", None)  # llama-cpp-python's Llama, for its own tools
        self.model_path = path
        self.model_id = model_id or path.name
        # The numbers depend on the weights, on how prompts are split into decode batches and on
        # the build's kernels (the default engine's fingerprint is the one every cache was made with).
        self.fingerprint = f"{fingerprint or f'{path.name}:{path.stat().st_size}'}|n_batch={n_batch}"
        if engine != "llama_cpp":
            self.fingerprint += f"|engine={engine}"
        caps = {LOGPROBS, SCORE, NEXT_TOKEN, EXACT_NEXT_TOKEN} | ({HIDDEN_STATE} if engine == "llama_cpp" else set())
        self.capabilities = frozenset(caps)
        self.logprobs_assured = True
        self.context_window = self.engine.n_ctx()
        self.n_vocab = self.engine.n_vocab()
        self._lock = threading.Lock()
        # Reuse is exact (whole decode batches of the canonical path only), so it changes no
        # result (tests/test_llm_prefix_reuse.py); reuse_prefix=False evaluates every request from scratch.
        self.reuse_prefix = reuse_default() if reuse_prefix is None else bool(reuse_prefix)
        prefix_cache_mb = prefix_cache_mb_default() if prefix_cache_mb is None else prefix_cache_mb
        self.n_batch = n_batch
        self._path: list[Chunk] = []  # the decode batches that built the live KV cache, in order
        self._store = PrefixStore(int(prefix_cache_mb * 2**20)) if self.reuse_prefix and prefix_cache_mb > 0 else None
        self.tokens_evaluated = self.tokens_reused = 0
        self.chat_template = self.engine.metadata.get("tokenizer.chat_template")
        self._bos_text, self._eos_text = self.engine.bos_text, self.engine.eos_text
        self._piece_cache: dict[int, bytes] = {}

    # ---- tokens -------------------------------------------------------------------------
    def render(self, prompt: Prompt) -> str:
        validate_messages(prompt)
        if isinstance(prompt, str):
            return prompt
        return render_chat(
            self.chat_template, plain_messages(prompt), bos_token=self._bos_text, eos_token=self._eos_text
        )

    def _tokenize_prompt(self, prompt: Prompt) -> list[int]:
        text = self.render(prompt)
        # special=True: the chat template's control tokens (<|im_start|> ...) are single tokens.
        # add_bos follows the model's own metadata (llama.cpp adds BOS only if the vocab asks).
        return self.engine.tokenize(text.encode("utf-8"), add_bos=True, special=True)

    def _prompt_path(self, prompt: Prompt) -> list[Chunk]:
        """The canonical decode path of a prompt: its tokens in batches of n_batch; but a
        conversation continued after a generation (an assistant message with `token_ids`) is read
        as the generation read it: the prompt before that message in batches, the generated ids
        one at a time (never re-tokenised text), then the rest in batches. Where those ids do not
        spell the message's text (e.g. a stop string cut it), the whole prompt is read as text."""
        i = continued_message(prompt)
        if not i:  # None, or a conversation that starts with the continued answer
            return batched(self._tokenize_prompt(prompt), self.n_batch)
        ids = [int(t) for t in prompt[i]["token_ids"]]
        head_text, full = self.render(prompt[:i]), self.render(prompt)
        spelled = b"".join(self.piece_bytes(t) for t in ids).decode("utf-8", errors="ignore")
        if spelled != prompt[i]["content"] or not full.startswith(head_text + spelled):
            return batched(self._tokenize_prompt(prompt), self.n_batch)
        head = self.engine.tokenize(head_text.encode("utf-8"), add_bos=True, special=True)
        tail = self.engine.tokenize(full[len(head_text) + len(spelled) :].encode("utf-8"), add_bos=False, special=True)
        return batched(head, self.n_batch) + singles(ids) + batched(tail, self.n_batch)

    def _tokenize_continuation(self, text: str) -> list[int]:
        return self.engine.tokenize(text.encode("utf-8"), add_bos=False, special=False)

    def count_tokens(self, text: str) -> int:
        return len(self._tokenize_continuation(text))

    def count_prompt_tokens(self, prompt: Prompt) -> int:
        return n_tokens(self._prompt_path(prompt))

    def piece_bytes(self, token: int) -> bytes:
        """The bytes of one token as it appears in generated text (leading space included)."""
        b = self._piece_cache.get(token)
        if b is None:
            b = self._piece_cache[token] = self.engine.piece_bytes(token)
        return b

    def piece(self, token: int) -> str:
        return self.piece_bytes(token).decode("utf-8", errors="replace")

    def _is_eog(self, token: int) -> bool:
        return self.engine.is_eog(token)

    # ---- evaluation ---------------------------------------------------------------------
    def _check_fits(self, n_prompt: int, extra: int = 1) -> None:
        if n_prompt + extra > self.context_window:
            raise InputError(
                f"prompt of {n_prompt} tokens does not fit the context window of {self.context_window} "
                f"tokens of {self.model_id} (split long passages, retrieve fewer, or raise n_ctx)"
            )

    def _evaluate(self, path: list[Chunk]) -> None:
        """Bring the context to the end of `path` (decode batches from position 0), reusing the
        batches it shares exactly with the live context or a saved state. The last batch is
        always evaluated, so the logits read next are fresh."""
        limit = len(path) - 1
        live = [t for c in self._path for t in c]
        if self.engine.n_tokens != len(live) or self.engine.live_tokens() != live:
            self._path = []  # someone used the Llama object directly: its KV cache is not ours
        keep = min(shared_chunks(self._path, path), limit) if self.reuse_prefix else 0
        if self._store is not None:
            saved, n = self._store.best(path)
            if saved is not None and min(n, limit) > keep and self._restore(saved.path, saved.state):
                keep = min(n, limit)
        self._truncate(keep)
        for chunk in path[keep:]:
            self._eval_chunk(chunk)
        self.tokens_reused += n_tokens(path[:keep])

    def _truncate(self, keep: int) -> None:
        """Keep the first `keep` batches of the live path (the engine's decode drops KV entries from n_tokens on)."""
        self._path = self._path[:keep]
        self.engine.n_tokens = n_tokens(self._path)

    def _eval_chunk(self, chunk: Chunk) -> None:
        self.engine.decode(chunk)  # len(chunk) <= n_batch: exactly one decode batch
        self._path.append(chunk)
        self.tokens_evaluated += len(chunk)

    def _remember(self) -> None:
        """Save the live KV cache for later requests, unless a saved state already holds it (only the
        sequence's KV cells: the last batch of a request is always evaluated afresh)."""
        if self._store is None or n_tokens(self._path) < MIN_SAVED_TOKENS or self._store.covers(self._path):
            return
        saved = self.engine.seq_state(self._store.budget_bytes)
        if saved is not None:
            self._store.put(tuple(self._path), *saved)

    def _restore(self, path, state) -> bool:
        """Make a saved sequence state the live KV cache (its cells replace sequence 0's)."""
        if not self.engine.set_seq_state(state, [t for c in path for t in c]):
            self._truncate(0)  # could not restore: evaluate from scratch instead
            return False
        self._path = list(path)
        return True

    def prefix_stats(self) -> dict[str, int]:
        """Tokens evaluated and reused, and the saved states' count, bytes and peak (budget kept)."""
        store = self._store.stats() if self._store is not None else {}
        return {"tokens_evaluated": self.tokens_evaluated, "tokens_reused": self.tokens_reused, **store}

    def _last_logits(self) -> np.ndarray:
        return self.engine.last_logits()

    def _eval_all_logits(self, tokens: list[int]) -> np.ndarray:
        """Evaluate `tokens` after the current state, returning the logits of every position."""
        rows = self.engine.eval_all_logits(tokens)
        self._path.extend(batched(tokens, self.n_batch))
        self.tokens_evaluated += len(tokens)
        return rows

    def _token_logprob(self, lp: np.ndarray, token: int, top_logprobs: int) -> TokenLogprob:
        top = []
        if top_logprobs > 0:
            top = [(self.piece(int(t)), float(lp[t])) for t in top_k_indices(lp, top_logprobs)]
        return TokenLogprob(token=self.piece(token), logprob=float(lp[token]), top=top)

    # ---- the LLM interface --------------------------------------------------------------
    def _generate(self, prompt: Prompt, options: GenerateOptions) -> Generation:
        max_tokens, temperature, seed, stop, logprobs, top_logprobs = astuple(options)
        with self._lock:
            path = self._prompt_path(prompt)
            n_prompt = n_tokens(path)
            self._check_fits(n_prompt)
            budget = min(max_tokens, self.context_window - n_prompt)
            rng = np.random.default_rng(seed)
            out_tokens: list[int] = []
            records: list[TokenLogprob] = []
            text_bytes = b""
            finish = "length"
            stop = [s for s in (stop or []) if s]
            self._evaluate(path)
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
                self._eval_chunk((token,))  # generated tokens: one decode batch each
            self._remember()
            text = text_bytes.decode("utf-8", errors="ignore")
            if stop:
                cut = min((text.find(s) for s in stop if s in text), default=-1)
                if cut >= 0:
                    text = text[:cut]
                    records = _trim_records(records, len(text))
            return Generation(
                text=text,
                tokens=records,
                finish_reason=finish,
                model=self.model_id,
                prompt_tokens=n_prompt,
                completion_tokens=len(out_tokens),
                token_ids=out_tokens,
            )

    def score(self, prompt: Prompt, continuation: str) -> ContinuationScore:
        with self._lock:
            path = self._prompt_path(prompt)
            c = self._tokenize_continuation(continuation)
            if not c:
                return ContinuationScore(tokens=[])
            self._check_fits(n_tokens(path) + len(c), extra=0)
            # Logits of position i predict token i+1: evaluate the prompt without its last token
            # (prefix reuse), then the last prompt token plus all but the last continuation token.
            # Canonical path: the prompt's path but its last token, then the rest in batches.
            last = path[-1][-1]
            head = path[:-1] + ([path[-1][:-1]] if len(path[-1]) > 1 else [])
            if head:
                self._evaluate(head)
            else:
                self._truncate(0)
            rows = self._eval_all_logits([last] + c[:-1])
            self._remember()
            out = []
            for row, token in zip(rows, c):
                lp = log_softmax(row)
                out.append(TokenLogprob(token=self.piece(token), logprob=float(lp[token])))
            return ContinuationScore(tokens=out)

    def next_token_logprobs(
        self, prompt: Prompt, *, top_k: int = 20, candidates: Sequence[str] = ()
    ) -> dict[str, float]:
        with self._lock:
            path = self._prompt_path(prompt)
            self._check_fits(n_tokens(path))
            self._evaluate(path)
            lp = log_softmax(self._last_logits())
            self._remember()
        out = {self.piece(int(t)): float(lp[t]) for t in top_k_indices(lp, top_k)} if top_k else {}
        for cand in candidates:
            for variant in (cand, " " + cand):
                ids = self._tokenize_continuation(variant)
                if ids:
                    out[self.piece(ids[0])] = float(lp[ids[0]])
        return out

    def hidden_state(self, text: str) -> list[float]:
        """Mean-pooled last-layer hidden state of `text` (the engine's embedding context over the
        same memory-mapped weights). The whole text is one batch, so it must fit EMBED_CTX tokens."""
        if not (text or "").strip():
            raise InputError("hidden_state: the text is empty")
        with self._lock:
            return self.engine.embed(text, EMBED_CTX)

    def close(self) -> None:
        if getattr(self, "_store", None) is not None:
            self._store.clear()
        engine = getattr(self, "engine", None)
        if engine is not None:
            engine.close()
            self.engine = self.llama = None


def _trim_records(records: list[TokenLogprob], n_chars: int) -> list[TokenLogprob]:
    """Keep the tokens that start before character `n_chars` (the cut at a stop string)."""
    kept, pos = [], 0
    for r in records:
        if pos >= n_chars:
            break
        kept.append(r)
        pos += len(r.token)
    return kept
