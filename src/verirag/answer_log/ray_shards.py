"""A log's blocks verified by Ray actors (`verirag verify LOG --executor ray --workers N`).

Each of `workers` actors builds the driver's pipeline from its config once, so the verifier is
loaded once per worker, and verifies one shard (a block of contiguous rows, the same blocks a local
run cuts) at a time with the local path's own code (`blocks.verify_block`). Shards go to whichever
actor is free; their records come back to the driver, which alone writes results.jsonl (one writer:
lines never interleave) as each shard finishes, so a killed run keeps every finished shard.

The verifier's identity (part of every record's key) is asked of every actor: workers with another
model file or options would write records under other keys, so they are refused. The driver never
loads the model.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from contextlib import ExitStack
from typing import Any

from verirag.errors import BackendError, InputError, VeriragError
from verirag.ray_session import ray_session


class ShardWorker:
    """The body of one Ray actor (`RayShards` makes it remote, so importing this needs no Ray)."""

    def __init__(self, config):
        from verirag.awf.pipeline import Pipeline

        self.pipeline = Pipeline(config)

    def identity(self, threshold) -> dict[str, Any]:
        from verirag.answer_log.blocks import verifier_identity

        return verifier_identity(self.pipeline, threshold)

    def verify(self, entries, keys, threshold):
        from verirag.answer_log.blocks import verify_block

        return verify_block(self.pipeline, entries, threshold, keys)


class RayShards:
    """The Ray executor of `run_log` (module doc): a context manager holding the actors."""

    def __init__(self, pipeline, *, workers: int = 2, address: str | None = None):
        self.pipeline, self.workers, self.address = pipeline, workers, address
        self._stack = ExitStack()
        self.actors: list = []

    def __enter__(self) -> RayShards:
        try:
            self.ray = self._stack.enter_context(ray_session(self.address, num_cpus=self.workers))
            cpus = self.ray.cluster_resources().get("CPU", 0)
            if cpus < self.workers:  # an actor that cannot be placed waits forever
                raise InputError(
                    f"--workers {self.workers} needs {self.workers} CPUs (one per worker); the Ray cluster has {cpus:g}"
                )
            actor = self.ray.remote(num_cpus=1)(ShardWorker)
            self.actors = [actor.remote(self.pipeline.config) for _ in range(self.workers)]
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc) -> None:
        for a in self.actors:  # a Ray that outlives the run (one the caller started) keeps no idle actors
            self.ray.kill(a)
        self.actors = []
        self._stack.close()

    def _get(self, refs):
        """ray.get, with a worker's VeriragError raised as itself (its message, not a traceback)."""
        try:
            return self.ray.get(refs)
        except self.ray.exceptions.RayTaskError as e:
            if isinstance(e.cause, VeriragError):
                raise e.cause from None
            raise
        except self.ray.exceptions.RayActorError as e:
            raise BackendError(f"a Ray worker died: {e}") from None

    def identity(self, threshold) -> dict[str, Any]:
        found = self._get([a.identity.remote(threshold) for a in self.actors])
        if any(f != found[0] for f in found[1:]):
            raise InputError(
                "the Ray workers verify with different verifiers (another model file or version on some "
                f"machines): {found[0]} vs {next(f for f in found if f != found[0])}; install the same on every worker"
            )
        return found[0]

    def verify(self, blocks: Iterable[tuple[list, list[str]]], threshold) -> Iterator[tuple[list[dict], Any]]:
        """(records, outage or None) of each block, in the order they finish."""
        threshold_ref = self.ray.put(threshold)
        blocks = iter(blocks)
        idle, running = list(self.actors), {}
        while True:
            while idle:
                block = next(blocks, None)
                if block is None:
                    break
                actor = idle.pop()
                running[actor.verify.remote(*block, threshold_ref)] = actor
            if not running:
                return
            ready, _ = self.ray.wait(list(running), num_returns=1)
            idle.append(running.pop(ready[0]))
            yield self._get(ready[0])
