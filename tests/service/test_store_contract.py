"""Both stores keep the same contract: events exactly once, expiry, checkpoint retention."""

from __future__ import annotations

import asyncio

import pytest

from service.store import Store

pytestmark = pytest.mark.anyio

T0 = 1_000_000.0


async def test_event_is_claimed_exactly_once(store: Store) -> None:
    await store.put_events("m", [("e1", '{"a": 1}'), ("e2", "two")], now=T0, ttl_seconds=10)
    assert await store.pending_count("m") == 2
    peeked = await store.peek_event("m", "e1", now=T0 + 1)
    assert (peeked.status, peeked.payload) == ("pending", '{"a": 1}')
    first = await store.claim_event("m", "e1", now=T0 + 1)
    assert (first.status, first.payload) == ("claimed", '{"a": 1}')
    again = await store.claim_event("m", "e1", now=T0 + 2)
    assert (again.status, again.payload) == ("duplicate", None)
    assert (await store.peek_event("m", "e1", now=T0 + 2)).status == "duplicate"
    assert (await store.claim_event("m", "nope", now=T0)).status == "unknown"
    assert (await store.claim_event("other", "e2", now=T0)).status == "unknown"
    assert await store.pending_count("m") == 1


async def test_concurrent_claims_take_an_event_once(store: Store) -> None:
    await store.put_events("m", [("e", "p")], now=T0, ttl_seconds=10)
    results = await asyncio.gather(*(store.claim_event("m", "e", now=T0) for _ in range(8)))
    assert sorted(r.status for r in results) == ["claimed"] + ["duplicate"] * 7


async def test_expired_event_is_refused_then_swept_once(store: Store) -> None:
    await store.put_events("m", [("old", "p-old"), ("new", "p-new")], now=T0, ttl_seconds=5)
    await store.put_events("m", [("late", "p-late")], now=T0 + 4, ttl_seconds=5)
    assert (await store.peek_event("m", "old", now=T0 + 6)).status == "expired"
    assert (await store.claim_event("m", "old", now=T0 + 6)).status == "expired"
    swept = await store.claim_expired("m", now=T0 + 6, limit=100)
    assert sorted(swept) == ["p-new", "p-old"]
    assert await store.claim_expired("m", now=T0 + 6, limit=100) == []
    assert (await store.claim_event("m", "old", now=T0 + 7)).status == "expired"
    assert (await store.claim_event("m", "late", now=T0 + 7)).status == "claimed"
    assert await store.pending_count("m") == 0


async def test_claim_expired_respects_limit(store: Store) -> None:
    events = [(f"e{i}", f"p{i}") for i in range(5)]
    await store.put_events("m", events, now=T0, ttl_seconds=1)
    first = await store.claim_expired("m", now=T0 + 2, limit=3)
    rest = await store.claim_expired("m", now=T0 + 2, limit=3)
    assert len(first) == 3 and len(rest) == 2
    assert sorted(first + rest) == sorted(p for _, p in events)


async def test_model_records_round_trip_and_delete(store: Store) -> None:
    await store.save_model("a", '{"x": 1}')
    await store.save_model("b", '{"x": 2}')
    assert await store.load_models() == {"a": '{"x": 1}', "b": '{"x": 2}'}
    assert await store.load_model("a") == '{"x": 1}'
    await store.save_checkpoint("a", version=3, blob=b"abc", keep=2, now=T0)
    await store.delete_model("a")
    assert await store.load_model("a") is None
    assert await store.list_checkpoints("a") == []
    assert list(await store.load_models()) == ["b"]


async def test_checkpoints_keep_the_newest_versions(store: Store) -> None:
    for version in (1, 2, 3, 3, 7):
        info = await store.save_checkpoint(
            "m", version=version, blob=f"blob-{version}".encode(), keep=3, now=T0
        )
        assert info.version == version and info.size_bytes == len(f"blob-{version}")
    listed = await store.list_checkpoints("m")
    assert [i.version for i in listed] == [7, 3, 3]
    assert [i.sequence for i in listed] == [5, 4, 3]
    assert await store.load_checkpoint("m", listed[0].sequence) == b"blob-7"
    assert await store.load_checkpoint("m", 1) is None
    assert await store.list_checkpoints("empty") == []
