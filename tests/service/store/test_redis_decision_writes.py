"""Decision writes of the Redis store: batched into few calls, and kept working on the cold paths.

Each test has a Redis of its own, so ``INFO commandstats`` counts only its calls.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import AsyncIterator
from typing import Any

import pytest
import redis
from redis.asyncio import Redis

from service.store import RedisStore, StoreUnavailable
from service.store.base import event_deadlines
from service.store.redis.decision_writes import FULL_BATCH
from tests.service.own_redis import OwnRedis, needs_redis_server

pytestmark = [pytest.mark.anyio, needs_redis_server]
T0 = 1_000.0


@contextlib.asynccontextmanager
async def opened(own_redis: OwnRedis, **options: Any) -> AsyncIterator[RedisStore]:
    """A store on the test's own Redis, closed after the block."""
    store = RedisStore.from_url(f"redis://127.0.0.1:{own_redis.port}/0", **options)
    try:
        yield store
    finally:
        await store.close()


def transactions(port: int) -> dict[str, int]:
    """Calls of EXEC, ZADD, HINCRBY and SET since the last reset, then reset."""
    client = redis.Redis(port=port)
    try:
        stats = client.info("commandstats")
        client.config_resetstat()
    finally:
        client.close()
    names = ("exec", "zadd", "hincrby", "set")
    return {name: int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in names}


async def pending(store: RedisStore, name: str, event_ids: list[str]) -> list[str]:
    found = [await store.peek_event(name, event_id, now=T0) for event_id in event_ids]
    return [f.status for f in found]


async def put_many(store: RedisStore, names: list[str], count: int, tag: str) -> list[str]:
    ids = [f"{tag}{i}" for i in range(count)]
    await asyncio.gather(
        *(
            store.put_events(names[i % len(names)], [(event_id, f"p{i}")], now=T0, ttl_seconds=60)
            for i, event_id in enumerate(ids)
        )
    )
    return ids


async def test_concurrent_writes_go_as_one_transaction_per_model(own_redis: OwnRedis) -> None:
    async with opened(own_redis) as store:
        await store.ping()
        await put_many(store, ["a"], 1, "warm")  # connects
        transactions(own_redis.port)
        ids = await put_many(store, ["a", "b"], 40, "e")
        assert transactions(own_redis.port) == {"exec": 2, "zadd": 2, "hincrby": 2, "set": 40}
        assert await pending(store, "a", ids[0::2]) == ["pending"] * 20
        assert await pending(store, "b", ids[1::2]) == ["pending"] * 20
        assert await pending(store, "a", ids[1:2]) == ["unknown"]


async def test_writes_queued_while_a_batch_travels_go_together_next(own_redis: OwnRedis) -> None:
    async with opened(own_redis) as store:
        await put_many(store, ["a"], 1, "warm")
        transactions(own_redis.port)
        first = asyncio.ensure_future(put_many(store, ["a"], 1, "first"))
        await asyncio.sleep(0)  # the first write is queued ...
        await asyncio.sleep(0)  # ... and sent
        later = await put_many(store, ["a"], 30, "later")
        await first
        assert transactions(own_redis.port) == {"exec": 2, "zadd": 2, "hincrby": 2, "set": 31}
        assert await pending(store, "a", ["first0", *later]) == ["pending"] * 31


async def test_a_full_batch_is_split_into_calls_of_at_most_full_batch(own_redis: OwnRedis) -> None:
    async with opened(own_redis) as store:
        await put_many(store, ["a"], 1, "warm")
        transactions(own_redis.port)
        events = [(f"big{i}", "p") for i in range(FULL_BATCH + 10)]
        await store.put_events("a", events, now=T0, ttl_seconds=60)
        ids = await put_many(store, ["a"], 5, "small")
        assert transactions(own_redis.port)["exec"] <= 3
        assert await pending(store, "a", [e for e, _ in events] + ids) == ["pending"] * (
            FULL_BATCH + 15
        )


async def test_the_decision_count_and_deadlines_are_stored(own_redis: OwnRedis) -> None:
    async with opened(own_redis, prefix="p:") as store:
        await store.put_events("a", [("x", "px"), ("y", "py")], now=T0, ttl_seconds=60)
        await store.put_events("a", [("z", "pz")], now=T0 + 1, ttl_seconds=60)
        client = redis.Redis(port=own_redis.port)
        assert client.hget("p:ctr:{a}", "decisions") == b"3"
        due = client.zrange("p:due:{a}", 0, -1, withscores=True)
        assert due == [(b"x", T0 + 60), (b"y", T0 + 60), (b"z", T0 + 61)]
        keep_ms = 1000 * (event_deadlines(T0, 60)[1] - T0)  # kept until, from when stored
        assert keep_ms - 1000 < client.pttl("p:ev:{a}:x") <= keep_ms
        assert (
            client.get("p:ev:{a}:z")
            == f"{T0 + 61!r}|{event_deadlines(T0 + 1, 60)[1]!r}|pz".encode()
        )
        client.close()


async def test_a_failed_transaction_fails_only_its_requests(own_redis: OwnRedis) -> None:
    async with opened(own_redis, prefix="p:") as store:
        redis.Redis(port=own_redis.port).set("p:due:{broken}", "not a sorted set")
        results = await asyncio.gather(
            store.put_events("broken", [("b", "p")], now=T0, ttl_seconds=60),
            store.put_events("fine", [("f", "p")], now=T0, ttl_seconds=60),
            return_exceptions=True,
        )
        assert isinstance(results[0], StoreUnavailable) and "WRONGTYPE" in str(results[0])
        assert results[1] is None
        assert await pending(store, "fine", ["f"]) == ["pending"]


async def test_a_dropped_connection_is_opened_again(own_redis: OwnRedis) -> None:
    async with opened(own_redis) as store:
        await put_many(store, ["a"], 1, "warm")
        killer = redis.Redis(port=own_redis.port)
        assert killer.client_kill_filter(_type="normal", skipme=True) >= 1
        killer.close()
        for _ in range(50):  # the store learns of the loss when the socket reports it
            await asyncio.sleep(0.01)
            try:
                ids = await put_many(store, ["a"], 5, "after")
                break
            except StoreUnavailable:
                continue
        assert await pending(store, "a", ids) == ["pending"] * 5


async def test_without_socket_timeouts_the_pooled_client_writes(own_redis: OwnRedis) -> None:
    store = RedisStore(Redis(port=own_redis.port))  # no wire connection without a timeout
    try:
        ids = await put_many(store, ["a", "b"], 12, "e")
        assert await pending(store, "a", ids[0::2]) == ["pending"] * 6
        assert await pending(store, "b", ids[1::2]) == ["pending"] * 6
    finally:
        await store.close()


async def test_writes_to_a_stopped_redis_fail_as_unavailable(own_redis: OwnRedis) -> None:
    store = RedisStore.from_url(f"redis://127.0.0.1:{own_redis.port}/0", timeout_seconds=0.2)
    try:
        await put_many(store, ["a"], 1, "warm")
        own_redis.signal(signal.SIGSTOP)
        results = await asyncio.gather(
            *(put_many(store, ["a"], 3, f"frozen{i}") for i in range(3)), return_exceptions=True
        )
        assert all(isinstance(r, StoreUnavailable) for r in results), results
    finally:
        own_redis.signal(signal.SIGCONT)
        await store.close()


async def claim(store: RedisStore, name: str, event_id: str) -> str:
    found = await store.append_feedback(name, event_id, '{"loss": 0.5}', now=T0 + 1)
    return found.status


async def test_feedback_is_claimed_on_the_wire_after_redis_lost_its_scripts(
    own_redis: OwnRedis,
) -> None:
    async with opened(own_redis) as store:
        await store.hold_model("a")
        ids = await put_many(store, ["a"], 3, "e")
        assert await claim(store, "a", ids[0]) == "claimed"
        redis.Redis(port=own_redis.port).script_flush()
        assert await claim(store, "a", ids[1]) == "claimed"  # the script itself was sent
        assert await claim(store, "a", ids[1]) == "duplicate"
        assert await pending(store, "a", ids) == ["duplicate", "duplicate", "pending"]


async def test_without_socket_timeouts_the_pooled_client_claims(own_redis: OwnRedis) -> None:
    store = RedisStore(Redis(port=own_redis.port))
    try:
        await store.hold_model("a")
        ids = await put_many(store, ["a"], 2, "e")
        assert await claim(store, "a", ids[0]) == "claimed"
        assert await pending(store, "a", ids) == ["duplicate", "pending"]
    finally:
        await store.close()


async def test_writes_queued_when_the_store_closes_fail_as_unavailable(
    own_redis: OwnRedis,
) -> None:
    store = RedisStore.from_url(f"redis://127.0.0.1:{own_redis.port}/0")
    await put_many(store, ["a"], 1, "warm")
    own_redis.signal(signal.SIGSTOP)  # the next batch stays in flight
    try:
        travelling = asyncio.ensure_future(put_many(store, ["a"], 2, "travelling"))
        await asyncio.sleep(0.01)
        queued = asyncio.ensure_future(put_many(store, ["a"], 2, "queued"))
        await asyncio.sleep(0.01)
        await store.close()
        for waiting in (travelling, queued):
            with pytest.raises(StoreUnavailable, match="closing"):
                await waiting
    finally:
        own_redis.signal(signal.SIGCONT)
