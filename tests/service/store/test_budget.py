"""The per-request store budget: calls spend it, a spent budget refuses at once."""

from __future__ import annotations

import asyncio
import inspect

import pytest

from service.store import StoreUnavailable
from service.store.base import budget_seconds, store_budget, wait_within_budget, within_budget

pytestmark = pytest.mark.anyio


async def answer(delay_seconds: float) -> str:
    await asyncio.sleep(delay_seconds)
    return "answered"


async def test_without_a_budget_a_call_takes_what_it_takes() -> None:
    assert budget_seconds() is None
    assert await within_budget(answer(0.01)) == "answered"


async def test_calls_spend_one_budget_then_are_refused() -> None:
    with store_budget(0.05):
        assert budget_seconds() == 0.05
        assert await within_budget(answer(0.0)) == "answered"
        with pytest.raises(StoreUnavailable, match=r"waited its 0\.05 s"):
            await within_budget(answer(10.0))  # cut when the budget runs out
        call = answer(0.0)
        with pytest.raises(StoreUnavailable):
            await within_budget(call)  # spent: refused without waiting
        assert inspect.getcoroutinestate(call) == inspect.CORO_CLOSED  # never started
        with store_budget(None):  # a wait that is the point of the request
            assert await within_budget(answer(0.06)) == "answered"
    assert budget_seconds() is None


async def test_a_lock_wait_spends_the_budget() -> None:
    lock = asyncio.Lock()
    await lock.acquire()
    with store_budget(0.05), pytest.raises(StoreUnavailable):
        await within_budget(lock.acquire())
    lock.release()
    assert not lock.locked()  # the refused waiter did not take it


async def test_a_waited_future_spends_the_same_budget() -> None:
    loop = asyncio.get_running_loop()
    with store_budget(0.05):
        answered: asyncio.Future[str] = loop.create_future()
        loop.call_later(0.01, answered.set_result, "answered")
        assert await wait_within_budget(answered) == "answered"
        never: asyncio.Future[str] = loop.create_future()
        with pytest.raises(StoreUnavailable, match=r"waited its 0\.05 s"):
            await wait_within_budget(never)  # failed when the budget runs out
        assert never.done()  # whoever would have answered it finds it done
        with pytest.raises(StoreUnavailable):
            await wait_within_budget(loop.create_future())  # spent: refused at once
    assert await wait_within_budget(answered) == "answered"  # no budget: just waits
