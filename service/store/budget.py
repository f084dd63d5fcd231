"""How long one request may wait on the store, all its store calls together.

A store's socket timeout bounds one call; a request may make several (a feedback reads
its decision, then claims it), wait for a pooled connection or for the lock of its
model's name (while another request creates, loads or deletes that model).  The HTTP
middleware gives each request a :class:`StoreBudget` (``BANDITREE_STORE_BUDGET_SECONDS``,
twice the Redis timeout unless set); every Redis call and the lock waits spend from it,
and once it is spent the request gets :class:`StoreUnavailable` (503) at once.  Only
waiting on the store counts, never CPU work between the calls.  Background work
(learners, sweeps, the snapshot watcher) has no budget; nor do the waits that are the
point of a request (``POST .../checkpoints`` waiting for the learner, pages of a log
export after the first, which get one budget each).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Iterator
from contextvars import ContextVar, Token
from typing import TypeVar

from service.store.base import StoreUnavailable

T = TypeVar("T")


class StoreBudget:
    """Seconds left to wait on the store."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.left = seconds

    def spent(self) -> StoreUnavailable:
        """The error of a request whose budget ran out."""
        return StoreUnavailable(f"this request waited its {self.seconds} s on the store")


_budget: ContextVar[StoreBudget | None] = ContextVar("banditree_store_budget", default=None)


@contextlib.contextmanager
def store_budget(seconds: float | None) -> Iterator[None]:
    """Store calls inside wait at most ``seconds`` in all (None: only their own timeouts)."""
    token = enter_budget(seconds)
    try:
        yield
    finally:
        leave_budget(token)


def enter_budget(seconds: float | None) -> Token[StoreBudget | None]:
    """:func:`store_budget` without a context manager (per request, where its generator
    frame costs more than the rest): store calls until :func:`leave_budget` with the
    token returned wait at most ``seconds`` in all."""
    return _budget.set(None if seconds is None else StoreBudget(seconds))


def leave_budget(token: Token[StoreBudget | None]) -> None:
    """End the budget :func:`enter_budget` began."""
    _budget.reset(token)


def budget_seconds() -> float | None:
    """The size of the current budget (None when there is none)."""
    budget = _budget.get()
    return None if budget is None else budget.seconds


async def within_budget(call: Awaitable[T]) -> T:
    """Await ``call``; StoreUnavailable when the current budget runs out first."""
    budget = _budget.get()
    if budget is None:
        return await call
    if budget.left <= 0:
        if asyncio.iscoroutine(call):
            call.close()
        raise budget.spent()
    started = time.monotonic()
    try:
        async with asyncio.timeout(budget.left):
            return await call
    except TimeoutError:
        raise budget.spent() from None
    finally:
        budget.left -= time.monotonic() - started


def _give_up(waiter: asyncio.Future[T], budget: StoreBudget) -> None:
    if not waiter.done():
        waiter.set_exception(budget.spent())


async def wait_within_budget(waiter: asyncio.Future[T]) -> T:
    """:func:`within_budget` for a future: one timer instead of a timeout scope.

    The future itself gets StoreUnavailable when the budget runs out first (whoever
    would have answered it later finds it done).
    """
    budget = _budget.get()
    if budget is None:
        return await waiter
    if budget.left <= 0:
        _give_up(waiter, budget)
        return await waiter
    loop = asyncio.get_running_loop()
    started = loop.time()
    timer = loop.call_at(started + budget.left, _give_up, waiter, budget)
    try:
        return await waiter
    finally:
        timer.cancel()
        budget.left -= loop.time() - started
