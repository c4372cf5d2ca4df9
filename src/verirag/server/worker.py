"""One model, one request at a time, behind a bounded queue.

A local model serves one request at a time (two at once would only halve each one's speed and
double its memory), so requests run on a single worker thread in arrival order. At most
`queue_size` requests wait; one more is refused at once (`Overloaded`, HTTP 429 with Retry-After)
rather than left to pile up. A request that waits longer than `queue_timeout` (`QueueTimeout`,
503) or runs longer than `run_timeout` (`RunTimeout`, 504) is answered at once and its work is
cancelled: a waiting job is skipped when its turn comes, a running one stops at its next stage (a
model call is not interrupted mid-way: llama.cpp offers no safe way to, so the worker stays busy
until that call returns).
"""

from __future__ import annotations

import asyncio
import math
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, TypeVar

T = TypeVar("T")


class Overloaded(Exception):
    """The queue is full; `retry_after` seconds is a fair guess of when it will not be."""

    def __init__(self, retry_after: int):
        super().__init__(f"the service is busy: {retry_after} s until a queue slot is likely free")
        self.retry_after = retry_after


class QueueTimeout(Exception):
    pass


class RunTimeout(Exception):
    pass


class Cancelled(Exception):
    """Raised inside a job at its next stage once its caller has given up on it."""


@dataclass
class CancelToken:
    """Checked by a job between stages (`check()`), set when its caller gave up."""

    event: threading.Event

    def check(self) -> None:
        if self.event.is_set():
            raise Cancelled("the request was cancelled: its client timed out")


class ModelWorker:
    def __init__(self, *, queue_size: int = 16, queue_timeout: float = 120.0, run_timeout: float = 300.0):
        if queue_size < 0:
            raise ValueError("queue_size must be >= 0")
        self.queue_size = queue_size
        self.queue_timeout = queue_timeout
        self.run_timeout = run_timeout
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="verirag-model")
        self._admitted = 0  # waiting + running, counted on the event loop only
        self._running = 0
        self._seconds = 0.0  # an exponential mean of run time, for Retry-After
        self.on_change: Callable[[int, int], None] = lambda waiting, running: None

    @property
    def waiting(self) -> int:
        return self._admitted - self._running

    @property
    def running(self) -> int:
        return self._running

    def retry_after(self) -> int:
        mean = self._seconds or 1.0
        return max(1, math.ceil(mean * (self.waiting + 1)))

    def _changed(self) -> None:
        self.on_change(self.waiting, self._running)

    async def run(self, job: Callable[[CancelToken], T]) -> T:
        """Run `job(token)` on the model thread; see the module docstring for what can be raised."""
        if self._admitted >= self.queue_size + 1:
            raise Overloaded(self.retry_after())
        loop = asyncio.get_running_loop()
        token = CancelToken(threading.Event())
        started = asyncio.Event()
        gate = threading.Lock()  # a job either starts or is abandoned, never both
        state = {"started": False, "abandoned": False}
        self._admitted += 1
        self._changed()

        def on_start() -> None:
            self._running += 1
            started.set()
            self._changed()

        def on_end(seconds: float) -> None:
            self._admitted -= 1
            self._running -= 1
            self._seconds = seconds if not self._seconds else 0.7 * self._seconds + 0.3 * seconds
            self._changed()

        def body() -> Any:
            with gate:
                if state["abandoned"]:  # its caller gave up while it waited: skip it
                    raise Cancelled("the request was abandoned while it waited")
                state["started"] = True
            loop.call_soon_threadsafe(on_start)
            t0 = time.perf_counter()
            try:
                return job(token)
            finally:
                loop.call_soon_threadsafe(on_end, time.perf_counter() - t0)

        def abandon() -> bool:
            """Give up a job that has not started: its queue slot is free at once (not when its
            turn would have come). False when it has started: then it ends as a running job."""
            with gate:
                if state["started"]:
                    return False
                if state["abandoned"]:
                    return True
                state["abandoned"] = True
            token.event.set()
            self._admitted -= 1
            self._changed()
            return True

        future = loop.run_in_executor(self._executor, body)
        try:
            try:
                await asyncio.wait_for(started.wait(), timeout=self.queue_timeout)
            except asyncio.TimeoutError:
                if abandon():
                    raise QueueTimeout(f"the request waited more than {self.queue_timeout:g} s for the model") from None
                await started.wait()  # it started as the wait ran out: it is a running job now
            # asyncio.wait, not wait_for: a TimeoutError the job itself raises is its own error
            done, _ = await asyncio.wait({future}, timeout=self.run_timeout)
            if not done:
                token.event.set()
                raise RunTimeout(f"the request ran for more than {self.run_timeout:g} s")
            return future.result()
        except BaseException:
            if not abandon():
                token.event.set()  # the caller went away (timeout, disconnect, shutdown): stop the job
            future.add_done_callback(lambda f: f.exception() if not f.cancelled() else None)
            raise

    def start(self, fn: Callable[[], Any]) -> None:
        """Run `fn` on the model thread ahead of any request, outside the queue (start-up work)."""
        self._executor.submit(fn)

    def shutdown(self) -> None:
        self._executor.shutdown(wait=True, cancel_futures=False)
