"""The model worker's queue: one job at a time, a bounded queue, timeouts that cancel.

The jobs here sleep instead of calling a model: these tests are about the queue."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

from verirag.server.worker import Cancelled, ModelWorker, Overloaded, QueueTimeout, RunTimeout


def run(coro):
    return asyncio.run(coro)


def test_jobs_run_one_at_a_time_in_arrival_order():
    order, active, peak = [], [0], [0]
    lock = threading.Lock()

    def job(i):
        def body(token):
            with lock:
                active[0] += 1
                peak[0] = max(peak[0], active[0])
            time.sleep(0.02)
            order.append(i)
            with lock:
                active[0] -= 1
            return i

        return body

    async def main():
        w = ModelWorker(queue_size=10)
        results = await asyncio.gather(*(w.run(job(i)) for i in range(6)))
        w.shutdown()
        return results

    assert run(main()) == list(range(6))
    assert order == list(range(6))
    assert peak[0] == 1


def test_a_full_queue_refuses_at_once_with_a_retry_after():
    release = threading.Event()

    async def main():
        w = ModelWorker(queue_size=2)
        depth = []
        w.on_change = lambda waiting, running: depth.append((waiting, running))
        held = [asyncio.ensure_future(w.run(lambda t: release.wait(5))) for _ in range(3)]  # 1 runs, 2 wait
        await asyncio.sleep(0.1)
        assert (w.running, w.waiting) == (1, 2)
        t0 = time.perf_counter()
        with pytest.raises(Overloaded) as e:
            await w.run(lambda t: None)
        assert time.perf_counter() - t0 < 0.5  # refused at once, not after waiting
        assert e.value.retry_after >= 1
        release.set()
        await asyncio.gather(*held)
        assert (w.running, w.waiting) == (0, 0)
        assert max(w + r for w, r in depth) == 3  # never more than 1 running + queue_size waiting
        w.shutdown()

    run(main())


def test_a_request_that_waits_too_long_gets_queue_timeout_and_its_job_never_runs():
    release = threading.Event()
    ran = []

    async def main():
        w = ModelWorker(queue_size=4, queue_timeout=0.2)
        first = asyncio.ensure_future(w.run(lambda t: release.wait(5)))
        await asyncio.sleep(0.05)
        with pytest.raises(QueueTimeout):
            await w.run(lambda t: ran.append(1))
        release.set()
        await first
        await asyncio.sleep(0.1)  # the skipped job has had its turn
        assert (w.running, w.waiting) == (0, 0)
        w.shutdown()

    run(main())
    assert ran == []


def test_a_request_that_runs_too_long_gets_run_timeout_and_its_job_stops_at_its_next_stage():
    stages = []

    def job(token):
        for i in range(50):
            token.check()  # the pipeline checks between stages
            stages.append(i)
            time.sleep(0.02)
        return "finished"

    async def main():
        w = ModelWorker(queue_size=4, run_timeout=0.15)
        with pytest.raises(RunTimeout):
            await w.run(job)
        await asyncio.sleep(0.2)
        assert (w.running, w.waiting) == (0, 0)  # the job stopped and freed the model
        w.shutdown()

    run(main())
    assert 1 <= len(stages) < 20


def test_a_job_error_reaches_its_caller_and_frees_the_model():
    async def main():
        w = ModelWorker()
        with pytest.raises(ValueError, match="boom"):
            await w.run(lambda t: (_ for _ in ()).throw(ValueError("boom")))
        assert await w.run(lambda t: 7) == 7
        assert (w.running, w.waiting) == (0, 0)
        w.shutdown()

    run(main())


def test_cancel_token_raises_once_set():
    from verirag.server.worker import CancelToken

    token = CancelToken(threading.Event())
    token.check()
    token.event.set()
    with pytest.raises(Cancelled):
        token.check()


def test_a_request_that_gave_up_waiting_frees_its_slot_at_once():
    release = threading.Event()

    async def main():
        w = ModelWorker(queue_size=1, queue_timeout=0.2)
        first = asyncio.ensure_future(w.run(lambda t: release.wait(5)))
        await asyncio.sleep(0.05)
        with pytest.raises(QueueTimeout):
            await w.run(lambda t: None)
        assert (w.running, w.waiting) == (1, 0)  # not counted while its skipped turn is pending
        waiter = asyncio.ensure_future(w.run(lambda t: "admitted"))  # the slot is free: no 429
        await asyncio.sleep(0.05)
        assert w.waiting == 1
        release.set()
        await first
        assert await waiter == "admitted"
        assert (w.running, w.waiting) == (0, 0)
        w.shutdown()

    run(main())


def test_a_timeout_error_of_the_job_itself_is_not_a_run_timeout():
    def job(token):
        raise TimeoutError("the backend timed out")

    async def main():
        w = ModelWorker(run_timeout=30)
        with pytest.raises(TimeoutError, match="the backend") as e:
            await w.run(job)
        assert not isinstance(e.value, RunTimeout)
        w.shutdown()

    run(main())
