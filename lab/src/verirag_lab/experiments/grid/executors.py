"""Who runs the work units: this process ("local", the default), or a Ray cluster ("ray").

Both run the same UnitRunner code on the same WorkUnits and hand every record back to the
driver, which alone appends to results.jsonl (one writer, so the file never interleaves).
Ray is an existing engine for users who outgrow one machine; local runs never import it.
"""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

from verirag.errors import InputError, VeriragError
from verirag.records import ResultRecord

EXECUTORS = ("local", "ray")
# Executors get `make_runner(unit)` (a UnitRunner for one WorkUnit) from the runner, so they never
# import it: the runner imports them.


def _load_failure(unit, err: BaseException) -> dict[str, Any]:
    return {
        "dataset": unit.dataset,
        "model": unit.model,
        "method": "*",
        "error": f"model could not be loaded: {type(err).__name__}: {err}",
    }


class LocalExecutor:
    def run(self, units, done, make_runner, emit, skip, advance, failures) -> None:
        for unit in units:
            try:  # built even when all looks done: a record is done only under its method's identity
                runner = make_runner(unit)
            except VeriragError as e:  # a missing model fails its unit, not the whole grid
                failures.append(_load_failure(unit, e))
                advance(unit.size)
                continue
            failures.extend(runner.failures)
            advance(runner.lost)
            todo, finished = runner.todo(done)
            skip(finished)
            if runner.concurrency > 1:
                lock = threading.Lock()

                def one(ex):
                    recs = runner.run_example(ex, done)  # noqa: B023
                    with lock:  # noqa: B023
                        for r in recs:
                            emit(r)

                with ThreadPoolExecutor(runner.concurrency) as pool:
                    for f in [pool.submit(one, ex) for ex in todo]:
                        f.result()
            else:
                for ex in todo:
                    for r in runner.run_example(ex, done):
                        emit(r)


def _ray_work(make_runner, unit, done):
    """Runs inside a Ray worker: the same UnitRunner; (records as dicts, failures, records done,
    records lost to methods that could not be built)."""
    try:
        runner = make_runner(unit)
    except VeriragError as e:
        return [], [_load_failure(unit, e)], 0, unit.size
    todo, finished = runner.todo(done)
    recs = [r.to_dict() for ex in todo for r in runner.run_example(ex, done)]
    return recs, runner.failures, finished, runner.lost


class RayExecutor:
    """Each work unit is split into chunks of `chunk_size` examples, one Ray task each.

    Connects to the cluster in RAY_ADDRESS when set, else starts a local one. Each task loads its
    model once per worker process (the process-wide model cache of verirag.llm.load_llm).
    """

    def __init__(self, chunk_size: int = 8, num_cpus: int | None = None):
        self.chunk_size, self.num_cpus = chunk_size, num_cpus

    def run(self, units, done, make_runner, emit, skip, advance, failures) -> None:
        from verirag.ray_session import ray_session

        with ray_session(num_cpus=self.num_cpus) as ray:
            work = ray.remote(_ray_work)
            futures = []
            for unit in units:  # the workers tell which records are done (they know the identities)
                for i in range(0, len(unit.examples), self.chunk_size):
                    chunk = replace(unit, examples=unit.examples[i : i + self.chunk_size])
                    futures.append(work.remote(make_runner, chunk, done))
            while futures:
                ready, futures = ray.wait(futures, num_returns=1)
                recs, fails, finished, lost = ray.get(ready[0])
                for d in recs:
                    emit(ResultRecord.from_dict(d))
                failures.extend(f for f in fails if f not in failures)
                skip(finished)
                advance(lost)


def get_executor(name: str):
    if name == "local":
        return LocalExecutor()
    if name == "ray":
        return RayExecutor()
    raise InputError(f"unknown executor {name!r}; use one of {', '.join(EXECUTORS)}")
