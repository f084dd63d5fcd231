"""The fair-share rule of learner processes: ceil(models / live), excess handed over."""

from __future__ import annotations

import pytest

from service.domain.runtime.share import LeaseShare
from service.store import RedisStore
from tests.service.conftest import REDIS_URL

pytestmark = pytest.mark.anyio


class _Live:
    """A store stand-in that answers how many learner processes are alive."""

    def __init__(self, live: int) -> None:
        self.live = live
        self.stored = 0
        self.withdrawn: list[str] = []

    async def announce_learner(
        self, holder: str, *, ttl_seconds: float, now: float
    ) -> tuple[int, int]:
        return self.live, self.stored

    async def withdraw_learner(self, holder: str) -> None:
        self.withdrawn.append(holder)


async def test_a_process_takes_its_share_and_hands_the_excess_over() -> None:
    store = _Live(1)
    woken: list[int] = []
    waiting: list[str] = []
    discovered: list[bool] = []
    share = LeaseShare(
        store,  # type: ignore[arg-type]
        holder="h", lease_seconds=3.0, models=lambda: 10, hand_over=woken.append,
        discover=lambda: discovered.append(True),
    )  # fmt: skip
    await share.beat()
    assert share.share == 10
    assert all(share.take() for _ in range(10)) and not share.take()
    store.live = 3  # two processes joined: ceil(10 / 3) = 4
    await share.beat()
    assert share.share == 4 and woken == [6]
    leaving = [share.should_leave() for _ in range(10)]
    assert leaving == [True] * 6 + [False] * 4  # six hand over, once each
    for _ in range(6):
        share.give_back(leaving=True)
    assert (share.led, share.leaving) == (4, 0)
    assert not share.take("a", lambda: waiting.append("a"))
    assert not share.take("b", lambda: waiting.append("b"))
    store.live = 2  # one died: ceil(10 / 2) = 5, room for one: the first waiting is woken
    await share.beat()
    assert share.share == 5 and waiting == ["a"] and woken == [6]
    assert share.take("a") and not share.take("c", lambda: waiting.append("c"))
    share.give_back()  # "a" did not get its lease: the next in line is woken
    assert waiting == ["a", "b"]
    assert discovered == []
    store.stored = 12  # the store holds two models this process has not found yet
    await share.beat()  # the same share as in the processes that know them all
    assert share.share == 6 and discovered == [True]
    await share.stop()
    assert store.withdrawn == ["h"]


async def test_the_redis_heartbeat_counts_live_processes(redis_prefix: str) -> None:
    store = RedisStore.from_url(REDIS_URL, prefix=redis_prefix)
    try:
        assert await store.announce_learner("a", ttl_seconds=2, now=100.0) == (1, 0)
        assert await store.announce_learner("b", ttl_seconds=2, now=100.5) == (2, 0)
        await store.save_model("m", "record")
        assert await store.announce_learner("a", ttl_seconds=2, now=101.0) == (2, 1)
        assert await store.announce_learner("a", ttl_seconds=2, now=102.9) == (1, 1)  # b lapsed
        await store.withdraw_learner("a")
        assert await store.announce_learner("c", ttl_seconds=2, now=103.0) == (1, 1)
    finally:
        await store.close()
