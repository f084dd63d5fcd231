"""``stop_tasks``: a task that goes on after a cancel is cancelled again, up to a deadline."""

from __future__ import annotations

import asyncio

from service.domain.runtime.tasks import stop_tasks


async def _loop_over_wait_for(ready: list[asyncio.Future[None]], rounds: list[int]) -> None:
    """A ``while True`` loop over ``wait_for`` calls, like a background loop over Redis writes."""
    while True:
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        ready.append(future)
        await asyncio.wait_for(future, 10.0)
        rounds.append(1)


def test_a_cancel_that_meets_a_completing_wait_for_is_repeated() -> None:
    async def scenario() -> tuple[bool, bool, int]:
        ready: list[asyncio.Future[None]] = []
        rounds: list[int] = []
        task = asyncio.create_task(_loop_over_wait_for(ready, rounds))
        await asyncio.sleep(0)
        # the awaited write completes in the loop iteration of the cancel: on Python 3.11
        # wait_for returns its result and the cancel is lost (CPython gh-86296)
        ready[-1].set_result(None)
        stopped = await stop_tasks([task], 5.0)
        return stopped, task.cancelled(), len(rounds)

    stopped, cancelled, _ = asyncio.run(scenario())
    assert stopped and cancelled


def test_a_task_that_never_stops_is_given_up_at_the_deadline() -> None:
    released = False

    async def stubborn() -> None:
        while True:
            try:
                await asyncio.sleep(10)
            except asyncio.CancelledError:
                if released:
                    raise

    async def scenario() -> tuple[bool, bool]:
        nonlocal released
        task = asyncio.create_task(stubborn())
        await asyncio.sleep(0)
        stopped = await stop_tasks([task], 0.3)
        done = task.done()
        released = True
        await stop_tasks([task], 5.0)
        return stopped, done

    assert asyncio.run(scenario()) == (False, False)
