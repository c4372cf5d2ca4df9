"""The trained verifier's pair logits as one shared statistic (issue 49, item 5): inside a
`shared_pair_logits()` block, the logit of a (claim, chunk) pair under one saved verifier is computed
once and read by whoever needs it (the verifier as a judge, the cascade's cheap judge, nli's
evidence finder, with any `read_top`).

The experiment grid opens one block per example, over all its methods (as it shares one trace): a
grid that runs `vanilla+verifier`, `vanilla+cascade` and `vanilla+nli(premise=evidence)` scores an
example's pairs once instead of three times. Outside a block nothing is kept. Why not one cache for
the process: the network's float32 arithmetic rounds a pair's logit differently in batches of other
shapes (in the last bits), so a process-wide cache would make a score depend on what the process
verified before; within one example's methods that is the price of computing once, across a log's
blocks or a service's requests it would break run-to-run equality (a log verified by Ray workers
and locally). Keys are digests of (the verifier's identity, claim, chunk): the weights (adapter
sha256), the encoder, the window and the device, so another verifier never reads these logits.
Bounded (least recently used go first) and thread-safe.
"""

from __future__ import annotations

import hashlib
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

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


_ACTIVE: ContextVar[PairLogitCache | None] = ContextVar("verirag_pair_logits", default=None)


@contextmanager
def shared_pair_logits(max_pairs: int = MAX_PAIRS) -> Iterator[PairLogitCache]:
    """Within this block, every saved verifier reads each pair's logit once (a block inside another
    shares the outer one's)."""
    outer = _ACTIVE.get()
    if outer is not None:
        yield outer
        return
    token = _ACTIVE.set(PairLogitCache(max_pairs))
    try:
        yield _ACTIVE.get()
    finally:
        _ACTIVE.reset(token)


def active_pair_logits() -> PairLogitCache | None:
    """The cache of the enclosing `shared_pair_logits()` block, if any."""
    return _ACTIVE.get()
