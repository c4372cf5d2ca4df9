"""The trained verifier's pair logits as one shared statistic (issue 49, item 5): the logit of a
(claim, chunk) pair under one saved verifier is computed once per process and read by whoever needs
it (the verifier as a judge, the cascade's cheap judge, nli's evidence finder, with any `read_top`).

A grid that runs `vanilla+verifier`, `vanilla+cascade` and `vanilla+nli(premise=evidence)` over the
same example scores its pairs once instead of three times. Keys are digests of (the verifier's
identity, claim, chunk): the weights (adapter sha256), the encoder and the window, so another
verifier, or the same one cut to another window, never reads these logits. Bounded (least recently
used go first) and thread-safe: a service's request threads share it.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence

import numpy as np

# About 100 bytes an entry: 200,000 pairs (a few thousand answers) in about 20 MB.
MAX_PAIRS = 200_000


class PairLogitCache:
    def __init__(self, max_pairs: int = MAX_PAIRS):
        self.max_pairs = max_pairs
        self._logits: OrderedDict[bytes, float] = OrderedDict()
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    @staticmethod
    def key(identity: str, claim: str, chunk: str) -> bytes:
        return hashlib.blake2b("\x00".join((identity, claim, chunk)).encode(), digest_size=16).digest()

    def logits(
        self,
        identity: str,
        claims: Sequence[str],
        chunks: Sequence[str],
        compute: Callable[[list[str], list[str]], np.ndarray],
    ) -> np.ndarray:
        """The logit of each (claim, chunk): cached ones read, the others computed by
        `compute(claims, chunks)` in one call and kept."""
        keys = [self.key(identity, a, b) for a, b in zip(claims, chunks)]
        out = np.empty(len(keys), dtype=np.float64)
        todo: dict[bytes, list[int]] = {}
        with self._lock:
            for i, k in enumerate(keys):
                z = self._logits.get(k)
                if z is None:
                    todo.setdefault(k, []).append(i)
                else:
                    self._logits.move_to_end(k)
                    out[i] = z
            self.hits += len(keys) - sum(len(v) for v in todo.values())
            self.misses += len(todo)
        if todo:
            # every missing place in input order, repeats included: what the network computes for
            # them is then exactly what it computes without the cache (batches of other shapes
            # round differently in the last bits)
            missing = sorted(i for places in todo.values() for i in places)
            fresh = compute([claims[i] for i in missing], [chunks[i] for i in missing])
            out[missing] = fresh
            with self._lock:
                for k, places in todo.items():
                    self._logits[k] = float(out[places[0]])
                while len(self._logits) > self.max_pairs:
                    self._logits.popitem(last=False)
        return out

    def __len__(self) -> int:
        return len(self._logits)

    def clear(self) -> None:
        with self._lock:
            self._logits.clear()
            self.hits = self.misses = 0


# The process's one cache (what every loaded verifier reads through).
PAIR_LOGITS = PairLogitCache()
