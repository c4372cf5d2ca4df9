"""The llama.cpp build under the GGUF backend: what `LlamaCppLLM`'s own decoding loop needs from it.

`LlamaCppLLM` reads logits, saves and restores KV states and picks tokens itself; an engine only
loads the model and runs llama.cpp's C API. Two engines: `llama_cpp` (llama-cpp-python, the
build `scripts/install_llama_cpp.sh` makes; the default) and `ik` (ik_llama.cpp, from the
`ik-llama-cpp-python` wheel: `verirag.llm.ik_engine`). VERIRAG_LLAMA_ENGINE picks one.

Every engine keeps one sequence whose KV cells hold `live_tokens()`; `decode` appends tokens in
decode batches of at most `n_batch` after dropping the cells from `n_tokens` on, as
`llama_cpp.Llama.eval` does, so a caller truncates by lowering `n_tokens`.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence
from typing import Protocol

import numpy as np

from verirag.errors import BackendError, InputError
from verirag.settings import LLAMA_ENGINES as ENGINES


class LlamaEngine(Protocol):
    name: str
    n_batch: int
    n_tokens: int  # the live sequence's length; lowering it drops the cells past it at the next decode
    metadata: dict[str, str]
    bos_text: str
    eos_text: str

    def n_ctx(self) -> int: ...
    def n_vocab(self) -> int: ...
    def tokenize(self, text: bytes, *, add_bos: bool, special: bool) -> list[int]: ...
    def piece_bytes(self, token: int) -> bytes: ...
    def is_eog(self, token: int) -> bool: ...
    def live_tokens(self) -> list[int]: ...
    def decode(self, tokens: Sequence[int]) -> None: ...
    def eval_all_logits(self, tokens: Sequence[int]) -> np.ndarray: ...
    def last_logits(self) -> np.ndarray: ...
    def seq_state(self, budget_bytes: int) -> tuple[ctypes.Array, int] | None: ...
    def set_seq_state(self, state, tokens: Sequence[int]) -> bool: ...
    def embed(self, text: str, n_ctx: int) -> list[float]: ...
    def close(self) -> None: ...


def engine_name(name: str | None) -> str:
    """A known engine's name (None: VERIRAG_LLAMA_ENGINE, else `llama_cpp`)."""
    if name is None:
        from verirag.settings import settings

        return settings().llama_engine
    if name not in ENGINES:
        raise InputError(f"unknown llama.cpp engine {name!r}: one of {', '.join(ENGINES)}")
    return name


def build_info(name: str | None = None) -> dict[str, str]:
    """Which library runs engine `name` and what its build offers (llama.cpp's system info): the
    benchmarks record it, since the same engine can be a portable or a native build."""
    name = engine_name(name)
    if name == "ik":
        from verirag.llm.ik_engine import _api

        lib = _api()._lib
    else:
        import llama_cpp

        lib = llama_cpp.llama_cpp._lib
    lib.llama_print_system_info.restype = ctypes.c_char_p
    return {"engine": name, "library": str(lib._name), "system_info": lib.llama_print_system_info().decode()[:300]}


def open_engine(name: str, path: str, *, n_ctx: int, n_threads: int, n_batch: int, n_gpu_layers: int, verbose: bool):
    if name == "ik":
        from verirag.llm.ik_engine import IkEngine

        return IkEngine(path, n_ctx=n_ctx, n_threads=n_threads, n_batch=n_batch, verbose=verbose)
    return LlamaCppEngine(
        path, n_ctx=n_ctx, n_threads=n_threads, n_batch=n_batch, n_gpu_layers=n_gpu_layers, verbose=verbose
    )


class LlamaCppEngine:
    """llama-cpp-python's `Llama` (`self.llama`), with logits for the last position only. Uses two
    private members of `Llama` (`_ctx`, `_batch`): its version is pinned in pyproject.toml."""

    name = "llama_cpp"

    def __init__(self, path: str, *, n_ctx: int, n_threads: int, n_batch: int, n_gpu_layers: int, verbose: bool):
        try:
            from llama_cpp import Llama
        except ImportError as e:  # pragma: no cover - dependency of the package
            raise BackendError("llama-cpp-python is not installed: pip install llama-cpp-python") from e
        self.llama = Llama(
            model_path=path,
            n_ctx=n_ctx,
            n_threads=n_threads,
            n_threads_batch=n_threads,
            n_batch=n_batch,
            n_gpu_layers=n_gpu_layers,
            logits_all=False,
            verbose=verbose,
        )
        self.n_batch = n_batch
        self._threads, self._verbose, self._path = n_threads, verbose, path
        self._embedder = None
        self.metadata = dict(self.llama.metadata or {})
        model = self.llama._model
        self.bos_text = model.token_get_text(model.token_bos()) if model.token_bos() >= 0 else ""
        self.eos_text = model.token_get_text(model.token_eos()) if model.token_eos() >= 0 else ""

    @property
    def n_tokens(self) -> int:
        return self.llama.n_tokens

    @n_tokens.setter
    def n_tokens(self, n: int) -> None:
        self.llama.n_tokens = n

    def n_ctx(self) -> int:
        return self.llama.n_ctx()

    def n_vocab(self) -> int:
        return self.llama.n_vocab()

    def tokenize(self, text: bytes, *, add_bos: bool, special: bool) -> list[int]:
        return self.llama.tokenize(text, add_bos=add_bos, special=special)

    def piece_bytes(self, token: int) -> bytes:
        import llama_cpp

        buf = ctypes.create_string_buffer(64)
        n = llama_cpp.llama_token_to_piece(self.llama._model.vocab, token, buf, len(buf), 0, False)
        if n < 0:  # buffer too small: -n is the size needed
            buf = ctypes.create_string_buffer(-n)
            n = llama_cpp.llama_token_to_piece(self.llama._model.vocab, token, buf, len(buf), 0, False)
        return buf.raw[:n]

    def is_eog(self, token: int) -> bool:
        import llama_cpp

        return bool(llama_cpp.llama_vocab_is_eog(self.llama._model.vocab, token))

    def live_tokens(self) -> list[int]:
        return list(self.llama.input_ids[: self.llama.n_tokens])

    def decode(self, tokens: Sequence[int]) -> None:
        self.llama.eval(list(tokens))

    def eval_all_logits(self, tokens: Sequence[int]) -> np.ndarray:
        llama = self.llama
        ctx = llama._ctx
        ctx.kv_cache_seq_rm(-1, llama.n_tokens, -1)
        rows = []
        n_vocab = llama.n_vocab()
        for i in range(0, len(tokens), self.n_batch):
            chunk = list(tokens[i : i + self.n_batch])
            n_past = llama.n_tokens
            llama._batch.set_batch(batch=chunk, n_past=n_past, logits_all=True)
            ctx.decode(llama._batch)
            rows.append(np.ctypeslib.as_array(ctx.get_logits(), shape=(len(chunk), n_vocab)).copy())
            llama.input_ids[n_past : n_past + len(chunk)] = chunk
            llama.n_tokens += len(chunk)
        return np.concatenate(rows, axis=0)

    def last_logits(self) -> np.ndarray:
        ptr = self.llama._ctx.get_logits_ith(-1)
        return np.ctypeslib.as_array(ptr, shape=(self.llama.n_vocab(),)).copy()

    def seq_state(self, budget_bytes: int):
        """The live sequence's KV cells only (llama_state_seq_get_data), not `Llama.save_state`,
        which also copies the logits buffer (n_batch x n_vocab floats) that reuse never reads."""
        import llama_cpp

        ctx = self.llama._ctx.ctx
        size = llama_cpp.llama_state_seq_get_size(ctx, 0)
        if size > budget_bytes:
            return None
        buf = (ctypes.c_uint8 * size)()
        written = llama_cpp.llama_state_seq_get_data(ctx, buf, size, 0)
        return (buf, int(written)) if written else None

    def set_seq_state(self, state, tokens: Sequence[int]) -> bool:
        import llama_cpp

        llama = self.llama
        if not llama_cpp.llama_state_seq_set_data(llama._ctx.ctx, state, len(state), 0):
            return False
        llama.input_ids[: len(tokens)] = list(tokens)
        llama.n_tokens = len(tokens)
        return True

    def embed(self, text: str, n_ctx: int) -> list[float]:
        """Mean-pooled last-layer hidden state, from a second context in embedding mode over the
        same (memory-mapped, so shared) weights, made on first use; the text is one batch."""
        from llama_cpp import LLAMA_POOLING_TYPE_MEAN, Llama

        if self._embedder is None:
            self._embedder = Llama(
                model_path=self._path,
                embedding=True,
                pooling_type=LLAMA_POOLING_TYPE_MEAN,
                n_ctx=n_ctx,
                n_batch=n_ctx,
                n_ubatch=n_ctx,
                n_threads=self._threads,
                n_threads_batch=self._threads,
                verbose=self._verbose,
            )
        n = len(self._embedder.tokenize(text.encode("utf-8")))
        if n > n_ctx:
            raise InputError(f"hidden_state: {n} tokens exceed the {n_ctx} read at once")
        return [float(x) for x in self._embedder.embed(text, normalize=False)]

    def close(self) -> None:
        if self._embedder is not None:
            self._embedder.close()
            self._embedder = None
        self.llama.close()
