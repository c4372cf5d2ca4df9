"""ik_llama.cpp as the engine of the GGUF backend (`VERIRAG_LLAMA_ENGINE=ik`; issue 48, item 5).

ik_llama.cpp is a fork of llama.cpp with faster CPU kernels: on a 2-core AVX2 machine it read
prompts about 1.4x as fast (`benchmarks/bench_llama_builds.py`); on an AVX-512 machine its PyPI wheel
(AVX2 only) reads slower than the AVX-512 llama.cpp, and a build for the CPU
(`scripts/build_ik_llama_cpp.sh`, found by `verirag.llm.ik_build` unless IK_LLAMA_CPP_LIB_PATH names
another library) 1.26-1.57x as fast at reading a prompt alone. Its Python wheel
(`ik-llama-cpp-python`, the `ik` extra) ships the library and ctypes bindings for part of its C
API; the calls `LlamaCppLLM` needs beyond them (KV cells of a sequence, state of a sequence, the
model's metadata) are bound here against the same library. Both libraries load in one process
(each wheel carries its own, under its own names).

Flash attention stays off: ik_llama.cpp's CPU flash attention asserts on longer prompts without
AVX-VNNI (its wheel turns it off there too), and logits must not depend on which CPU ran them.
"""

from __future__ import annotations

import ctypes
from collections.abc import Sequence

import numpy as np

from verirag.errors import BackendError, InputError, ModelNotFoundError


def _api():
    """ik_llama_cpp's ctypes module, with the few functions it leaves unbound bound here."""
    from verirag.llm.ik_build import use_native_library

    use_native_library()  # this CPU's build, when the environment names no library (read at import)
    try:
        from ik_llama_cpp import _ctypes_api as C
    except ImportError as e:
        raise BackendError(
            "the ik engine needs ik_llama.cpp: pip install 'verirag[ik]' (or ik-llama-cpp-python)"
        ) from e
    lib = C._lib
    if not getattr(lib, "_verirag_bound", False):
        p, i32, size = ctypes.c_void_p, ctypes.c_int32, ctypes.c_size_t
        # The sequence-state calls of newer ik_llama.cpp take a trailing flags word; older ones do
        # not, and an extra 0 in a register is ignored by the x86-64 and arm64 C conventions.
        for name, args, res in (
            ("llama_kv_cache_seq_rm", [p, i32, i32, i32], ctypes.c_bool),
            ("llama_state_seq_get_size", [p, i32, ctypes.c_uint32], size),
            ("llama_state_seq_get_data", [p, p, size, i32, ctypes.c_uint32], size),
            ("llama_state_seq_set_data", [p, p, size, i32, ctypes.c_uint32], size),
            ("llama_model_meta_val_str", [p, ctypes.c_char_p, ctypes.c_char_p, size], i32),
            ("llama_token_bos", [p], i32),
            ("llama_token_eos", [p], i32),
            ("llama_token_get_text", [p, i32], ctypes.c_char_p),
            ("llama_n_vocab", [p], i32),
        ):
            fn = getattr(lib, name)
            fn.argtypes, fn.restype = args, res
        lib._verirag_bound = True
    return C


# llama.cpp's log callback type; the quiet one is kept referenced for the life of the process
_LOG_CALLBACK = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)
_QUIET = _LOG_CALLBACK(lambda level, text, data: None)


def _quiet(lib) -> None:
    """Silence the library's loading chatter, as llama-cpp-python's verbose=False does."""
    lib.llama_log_set.argtypes, lib.llama_log_set.restype = [_LOG_CALLBACK, ctypes.c_void_p], None
    lib.llama_log_set(_QUIET, None)


class IkEngine:
    """One ik_llama.cpp context with one sequence, logits for the last position of each batch
    (every position in `eval_all_logits`)."""

    name = "ik"

    def __init__(self, path: str, *, n_ctx: int, n_threads: int, n_batch: int, verbose: bool = False):
        C = self._C = _api()
        from ik_llama_cpp._internals import IkModel

        if not verbose:
            _quiet(C._lib)

        try:
            self._model = IkModel(path)
        except RuntimeError as e:
            raise ModelNotFoundError(f"ik_llama.cpp could not load {path}: {e}") from e
        params = C.llama_context_default_params()
        params.n_ctx, params.n_batch, params.n_ubatch = n_ctx, n_batch, n_batch
        params.n_seq_max = 1
        params.n_threads = params.n_threads_batch = n_threads
        params.flash_attn = False
        params.logits_all = False
        self._ctx = C.llama_init_from_model(self._model.model, params)
        if not self._ctx:
            raise ModelNotFoundError(f"ik_llama.cpp could not make a context of {n_ctx} tokens for {path}")
        self._n_ctx, self.n_batch, self._path = n_ctx, n_batch, path
        self._n_vocab = C._lib.llama_n_vocab(self._model.model)
        self._batch = C.llama_batch_init(n_batch, 0, 1)
        self._ids = np.zeros(n_ctx, dtype=np.int32)
        self.n_tokens = 0
        self.metadata = {}
        template = self._meta("tokenizer.chat_template")
        if template:
            self.metadata["tokenizer.chat_template"] = template
        self.bos_text, self.eos_text = (
            self._token_text(C._lib.llama_token_bos),
            self._token_text(C._lib.llama_token_eos),
        )

    def _meta(self, key: str) -> str | None:
        size = 1 << 16
        buf = ctypes.create_string_buffer(size)
        n = self._C._lib.llama_model_meta_val_str(self._model.model, key.encode(), buf, size)
        if n >= size:  # a longer value: ask again with room for it
            buf = ctypes.create_string_buffer(n + 1)
            n = self._C._lib.llama_model_meta_val_str(self._model.model, key.encode(), buf, n + 1)
        return buf.value.decode("utf-8") if n >= 0 else None

    def _token_text(self, which) -> str:
        token = which(self._model.model)
        return self._C._lib.llama_token_get_text(self._model.model, token).decode("utf-8") if token >= 0 else ""

    def n_ctx(self) -> int:
        return self._n_ctx

    def n_vocab(self) -> int:
        return self._n_vocab

    def tokenize(self, text: bytes, *, add_bos: bool, special: bool) -> list[int]:
        C = self._C
        n = C.llama_tokenize(self._model.model, text, len(text), None, 0, add_bos, special)
        buf = (C.llama_token * abs(n))()
        n = C.llama_tokenize(self._model.model, text, len(text), buf, abs(n), add_bos, special)
        if n < 0:
            raise InputError(f"ik_llama.cpp could not tokenize {len(text)} bytes")
        return list(buf[:n])

    def piece_bytes(self, token: int) -> bytes:
        buf = ctypes.create_string_buffer(64)
        n = self._C.llama_token_to_piece(self._model.model, token, buf, len(buf), 0, False)
        if n < 0:
            buf = ctypes.create_string_buffer(-n)
            n = self._C.llama_token_to_piece(self._model.model, token, buf, len(buf), 0, False)
        return buf.raw[:n]

    def is_eog(self, token: int) -> bool:
        return bool(self._C.llama_token_is_eog(self._model.model, token))

    def live_tokens(self) -> list[int]:
        return self._ids[: self.n_tokens].tolist()

    def _decode(self, chunk: Sequence[int], all_logits: bool) -> None:
        b, n_past = self._batch, self.n_tokens
        b.n_tokens = len(chunk)
        for i, token in enumerate(chunk):
            b.token[i], b.pos[i], b.n_seq_id[i] = int(token), n_past + i, 1
            b.seq_id[i][0] = 0
            b.logits[i] = 1 if all_logits or i == len(chunk) - 1 else 0
        code = self._C.llama_decode(self._ctx, b)
        if code != 0:
            raise BackendError(f"ik_llama.cpp could not decode {len(chunk)} tokens at {n_past} (code {code})")
        self._ids[n_past : n_past + len(chunk)] = chunk
        self.n_tokens += len(chunk)

    def decode(self, tokens: Sequence[int]) -> None:
        self._C._lib.llama_kv_cache_seq_rm(self._ctx, -1, self.n_tokens, -1)
        for i in range(0, len(tokens), self.n_batch):
            self._decode(tokens[i : i + self.n_batch], all_logits=False)

    def eval_all_logits(self, tokens: Sequence[int]) -> np.ndarray:
        self._C._lib.llama_kv_cache_seq_rm(self._ctx, -1, self.n_tokens, -1)
        rows = []
        for i in range(0, len(tokens), self.n_batch):
            chunk = tokens[i : i + self.n_batch]
            self._decode(chunk, all_logits=True)
            rows.append(np.stack([self._logits(j) for j in range(len(chunk))]))
        return np.concatenate(rows, axis=0)

    def _logits(self, i: int) -> np.ndarray:
        ptr = self._C.llama_get_logits_ith(self._ctx, i)
        return np.ctypeslib.as_array(ptr, shape=(self._n_vocab,)).copy()

    def last_logits(self) -> np.ndarray:
        return self._logits(-1)

    def seq_state(self, budget_bytes: int):
        lib = self._C._lib
        size = lib.llama_state_seq_get_size(self._ctx, 0, 0)
        if size > budget_bytes:
            return None
        buf = (ctypes.c_uint8 * size)()
        written = lib.llama_state_seq_get_data(self._ctx, buf, size, 0, 0)
        return (buf, int(written)) if written else None

    def set_seq_state(self, state, tokens: Sequence[int]) -> bool:
        if not self._C._lib.llama_state_seq_set_data(self._ctx, state, len(state), 0, 0):
            return False
        self._ids[: len(tokens)] = list(tokens)
        self.n_tokens = len(tokens)
        return True

    def embed(self, text: str, n_ctx: int) -> list[float]:
        # ik_llama_cpp pools hidden states with non-causal attention, llama-cpp-python with causal:
        # a probe trained on one would read the other wrongly, so this engine offers none.
        raise BackendError("hidden states are not offered by the ik engine: use VERIRAG_LLAMA_ENGINE=llama_cpp")

    def close(self) -> None:
        if self._ctx:
            self._C.llama_batch_free(self._batch)
            self._C.llama_free(self._ctx)
            self._ctx = None
        if self._model is not None:
            self._model.close()
            self._model = None
