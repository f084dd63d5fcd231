"""Both stores keep one contract: decisions once, the log, the lease, fencing, retention."""

from __future__ import annotations

import asyncio
import sqlite3

import pytest

from service.store import (
    FencedOut,
    HeldCounters,
    ModelGone,
    OfferedSnapshot,
    RedisStore,
    SqliteStore,
    Store,
)
from tests.service.conftest import delete_prefix

pytestmark = pytest.mark.anyio

T0 = 1_000_000.0


async def test_feedback_claims_its_decision_and_logs_it_once(store: Store) -> None:
    await store.hold_model("m")
    await store.put_events("m", [("e1", '{"a": 1}'), ("e2", "two")], now=T0, ttl_seconds=10)
    assert await store.pending_count("m") == 2
    peeked = await store.peek_event("m", "e1", now=T0 + 1)
    assert (peeked.status, peeked.payload) == ("pending", '{"a": 1}')
    first = await store.append_feedback("m", "e1", '{"loss": 0.5}', now=T0 + 1)
    assert (first.status, first.payload, first.offset) == ("claimed", '{"a": 1}', 1)
    again = await store.append_feedback("m", "e1", '{"loss": 0.0}', now=T0 + 2)
    assert (again.status, again.payload) == ("duplicate", None)
    assert (await store.peek_event("m", "e1", now=T0 + 2)).status == "duplicate"
    assert (await store.append_feedback("m", "nope", "{}", now=T0)).status == "unknown"
    assert (await store.append_feedback("other", "e2", "{}", now=T0)).status == "unknown"
    assert await store.pending_count("m") == 1
    second = await store.append_feedback("m", "e2", '{"loss": 1.0}', now=T0 + 3)
    assert second.offset == 2
    entries = await store.read_log("m", after=0, limit=10)
    assert [(e.offset, e.event_id, e.decision, e.feedback, e.acked_at) for e in entries] == [
        (1, "e1", '{"a": 1}', '{"loss": 0.5}', T0 + 1),
        (2, "e2", "two", '{"loss": 1.0}', T0 + 3),
    ]
    assert [e.offset for e in await store.read_log("m", after=1, limit=10)] == [2]
    assert await store.read_log("m", after=0, limit=1) == entries[:1]
    bounds = await store.log_bounds("m")
    assert (bounds.first, bounds.last, bounds.length) == (1, 2, 2)
    assert (await store.log_bounds("other")).length == 0


async def test_concurrent_feedback_logs_a_decision_once(store: Store) -> None:
    await store.hold_model("m")
    await store.put_events("m", [("e", "p")], now=T0, ttl_seconds=10)
    results = await asyncio.gather(
        *(store.append_feedback("m", "e", f'{{"loss": {i}}}', now=T0) for i in range(8))
    )
    assert sorted(r.status for r in results) == ["claimed"] + ["duplicate"] * 7
    assert len(await store.read_log("m", after=0, limit=100)) == 1


async def test_expired_decisions_are_refused_then_logged_once(store: Store) -> None:
    await store.hold_model("m")
    await store.put_events("m", [("old", "p-old"), ("new", "p-new")], now=T0, ttl_seconds=5)
    await store.put_events("m", [("late", "p-late")], now=T0 + 4, ttl_seconds=5)
    assert (await store.peek_event("m", "old", now=T0 + 6)).status == "expired"
    assert (await store.append_feedback("m", "old", "{}", now=T0 + 6)).status == "expired"
    assert await store.expire_events("m", now=T0 + 6, limit=100, log=True) == 2
    assert await store.expire_events("m", now=T0 + 6, limit=100, log=True) == 0
    assert (await store.append_feedback("m", "old", "{}", now=T0 + 7)).status == "expired"
    assert (await store.append_feedback("m", "late", '{"loss": 1}', now=T0 + 7)).offset == 3
    assert await store.pending_count("m") == 0
    entries = await store.read_log("m", after=0, limit=10)
    assert sorted((e.event_id, e.decision, e.feedback) for e in entries[:2]) == [
        ("new", "p-new", None), ("old", "p-old", None),
    ]  # fmt: skip
    assert entries[2].event_id == "late"


async def test_a_large_batch_of_decisions_is_stored_and_expires_whole(store: Store) -> None:
    """More decisions in one write than one call of a store script takes at a time."""
    await store.hold_model("m")
    events = [(f"e{i}", f"p{i}") for i in range(1234)]
    await store.put_events("m", events, now=T0, ttl_seconds=1)
    await store.put_events("m", [("late", "p")], now=T0 + 5, ttl_seconds=1)
    assert await store.pending_count("m") == 1235
    found = await store.peek_event("m", "e1233", now=T0)
    assert (found.status, found.payload) == ("pending", "p1233")
    assert await store.expire_events("m", now=T0 + 2, limit=5000, log=False) == 1234
    assert await store.pending_count("m") == 1


async def test_expiry_respects_limit_and_can_skip_the_log(store: Store) -> None:
    await store.hold_model("m")
    await store.put_events("m", [(f"e{i}", f"p{i}") for i in range(5)], now=T0, ttl_seconds=1)
    assert await store.expire_events("m", now=T0 + 2, limit=3, log=False) == 3
    assert await store.expire_events("m", now=T0 + 2, limit=3, log=False) == 2
    assert await store.read_log("m", after=0, limit=10) == []
    assert (await store.log_bounds("m")).last == 0


async def test_model_records_round_trip_and_delete(store: Store) -> None:
    await store.hold_model("a")
    await store.save_model("a", '{"x": 1}')
    await store.save_model("b", '{"x": 2}')
    assert await store.load_models() == {"a": '{"x": 1}', "b": '{"x": 2}'}
    assert await store.load_model("a") == '{"x": 1}'
    await store.put_events("a", [("e", "p")], now=T0, ttl_seconds=10)
    await store.append_feedback("a", "e", "{}", now=T0)
    token = await store.acquire_lease("a", "h", ttl_seconds=10, now=T0)
    assert token is not None
    await store.save_checkpoint(
        "a", version=3, blob=b"abc", keep=2, now=T0, offset=0, acked_at=0.0, token=token
    )
    await store.delete_model("a")
    assert await store.load_model("a") is None
    assert await store.list_checkpoints("a") == []
    assert await store.read_log("a", after=0, limit=10) == []
    assert await store.lease("a", now=T0) is None
    assert list(await store.load_models()) == ["b"]


async def test_one_lease_holder_and_tokens_grow(store: Store) -> None:
    await store.hold_model("m")
    first = await store.acquire_lease("m", "a", ttl_seconds=30, now=T0)
    assert first is not None
    assert await store.acquire_lease("m", "b", ttl_seconds=30, now=T0) is None
    held = await store.lease("m", now=T0)
    assert held is not None and (held.holder, held.token) == ("a", first)
    assert await store.renew_lease("m", "a", first, ttl_seconds=30, now=T0)
    assert not await store.renew_lease("m", "b", first, ttl_seconds=30, now=T0)
    await store.release_lease("m", "a", first)
    second = await store.acquire_lease("m", "b", ttl_seconds=30, now=T0)
    assert second is not None and second > first
    assert not await store.renew_lease("m", "a", first, ttl_seconds=30, now=T0)
    again = await store.acquire_lease("m", "b", ttl_seconds=30, now=T0)  # its own: a new token
    assert again is not None and again > second


async def test_a_lapsed_lease_is_taken_over(store: Store) -> None:
    await store.hold_model("m")
    first = await store.acquire_lease("m", "a", ttl_seconds=0.2, now=T0)
    assert first is not None
    await asyncio.sleep(0.3)  # Redis expires keys by its own clock
    second = await store.acquire_lease("m", "b", ttl_seconds=30, now=T0 + 0.3)
    assert second is not None and second > first
    assert not await store.renew_lease("m", "a", first, ttl_seconds=30, now=T0 + 0.3)


async def test_a_stale_token_cannot_write_a_checkpoint(store: Store) -> None:
    await store.hold_model("m")
    old = await store.acquire_lease("m", "a", ttl_seconds=30, now=T0)
    assert old is not None
    saved = await store.save_checkpoint(
        "m", version=1, blob=b"one", keep=5, now=T0, offset=4, acked_at=T0, token=old
    )
    await store.release_lease("m", "a", old)
    new = await store.acquire_lease("m", "b", ttl_seconds=30, now=T0)
    assert new is not None
    with pytest.raises(FencedOut):
        await store.save_checkpoint(
            "m", version=2, blob=b"stale", keep=5, now=T0, offset=9, acked_at=T0, token=old
        )
    listed = await store.list_checkpoints("m")
    assert listed == [saved] and (saved.offset, saved.acked_at, saved.token) == (4, T0, old)
    # an operator write (rollback) revokes the lease and fences its holder out
    await store.save_checkpoint(
        "m", version=1, blob=b"one", keep=5, now=T0, offset=9, acked_at=0.0, token=-1
    )
    assert await store.lease("m", now=T0) is None
    with pytest.raises(FencedOut):
        await store.save_checkpoint(
            "m", version=3, blob=b"x", keep=5, now=T0, offset=9, acked_at=T0, token=new
        )


async def test_checkpoints_keep_the_newest_and_trim_the_log(store: Store) -> None:
    await store.hold_model("m")
    events = [(f"e{i}", f"p{i}") for i in range(10)]
    await store.put_events("m", events, now=T0, ttl_seconds=10)
    for event_id, _ in events:
        await store.append_feedback("m", event_id, "{}", now=T0)
    token = await store.acquire_lease("m", "a", ttl_seconds=30, now=T0)
    assert token is not None
    for version, offset in ((1, 2), (2, 4), (3, 6), (3, 7), (7, 8)):
        info = await store.save_checkpoint(
            "m", version=version, blob=f"blob-{version}".encode(), keep=3, now=T0,
            offset=offset, acked_at=T0, token=token,
        )  # fmt: skip
        assert info.version == version and info.size_bytes == len(f"blob-{version}")
    listed = await store.list_checkpoints("m")
    assert [(i.version, i.offset) for i in listed] == [(7, 8), (3, 7), (3, 6)]
    assert [i.sequence for i in listed] == [5, 4, 3]
    assert await store.load_checkpoint("m", listed[0].sequence) == b"blob-7"
    assert await store.load_checkpoint("m", 1) is None
    assert await store.list_checkpoints("empty") == []
    # entries at or below the oldest kept checkpoint's offset (6) are gone
    assert [e.offset for e in await store.read_log("m", after=0, limit=100)] == [7, 8, 9, 10]
    assert (await store.log_bounds("m")).first == 7


async def test_checkpoint_requests_and_notices(store: Store) -> None:
    await store.hold_model("m")
    assert not await store.take_checkpoint_request("m")
    await store.request_checkpoint("m")
    assert await store.take_checkpoint_request("m")
    assert not await store.take_checkpoint_request("m")
    assert await store.snapshot_notices(0.05) == set()  # subscribes
    token = await store.acquire_lease("m", "a", ttl_seconds=30, now=T0)
    assert token is not None
    await store.save_checkpoint(
        "m", version=1, blob=b"x", keep=2, now=T0, offset=0, acked_at=0.0, token=token
    )
    assert await store.snapshot_notices(2.0) == {"m"}


async def test_concurrent_decision_writes_all_land(store: Store) -> None:
    batches = [[(f"e{i}-{j}", f"p{i}-{j}") for j in range(3)] for i in range(20)]
    await asyncio.gather(
        *(store.put_events("m", batch, now=T0, ttl_seconds=10) for batch in batches)
    )
    assert await store.pending_count("m") == 60
    assert (await store.log_bounds("m")).decisions == 60
    found = await store.peek_event("m", "e7-2", now=T0)
    assert (found.status, found.payload) == ("pending", "p7-2")


async def test_the_log_lease_and_checkpoints_of_a_model_not_held_are_refused(
    store: Store,
) -> None:
    await store.put_events("m", [("e", "p")], now=T0, ttl_seconds=10)
    with pytest.raises(ModelGone):
        await store.append_feedback("m", "e", "{}", now=T0)
    with pytest.raises(ModelGone):
        await store.acquire_lease("m", "a", ttl_seconds=30, now=T0)
    with pytest.raises(ModelGone):
        await store.expire_events("m", now=T0 + 20, limit=10, log=True)
    with pytest.raises(ModelGone):
        await store.save_checkpoint(
            "m", version=1, blob=b"x", keep=2, now=T0, offset=0, acked_at=0.0, token=-1
        )
    assert await store.hold_model("m") and not await store.hold_model("m")
    assert (await store.append_feedback("m", "e", "{}", now=T0)).offset == 1
    await store.delete_model("m")
    await store.put_events("m", [("g", "r")], now=T0, ttl_seconds=10)  # a replica not yet told
    with pytest.raises(ModelGone):
        await store.append_feedback("m", "g", "{}", now=T0)


async def lose_everything(store: Store) -> None:
    """What a Redis without persistence does when it restarts: every key is gone."""
    if isinstance(store, RedisStore):
        delete_prefix(store.prefix)
    else:
        assert isinstance(store, SqliteStore)
        with sqlite3.connect(store.path) as db:
            tables = [
                row[0] for row in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")
            ]
            for table in tables:
                db.execute(f"DELETE FROM {table}")


async def test_a_store_that_lost_its_data_goes_on_from_what_a_process_knew(store: Store) -> None:
    epoch = await store.epoch()
    assert await store.epoch() == epoch
    await store.hold_model("m")
    await store.save_model("m", "record")
    await store.put_events("m", [(f"e{i}", f"p{i}") for i in range(3)], now=T0, ttl_seconds=10)
    for i in range(3):
        await store.append_feedback("m", f"e{i}", "{}", now=T0)
    old = await store.acquire_lease("m", "a", ttl_seconds=30, now=T0)
    assert old is not None
    before = await store.save_checkpoint(
        "m", version=3, blob=b"v3", keep=5, now=T0, offset=3, acked_at=T0, token=old
    )

    await lose_everything(store)
    assert await store.epoch() != epoch  # a loss, not a deletion
    assert await store.load_models() == {}
    await store.put_events("m", [("late", "p-late")], now=T0, ttl_seconds=10)
    with pytest.raises(ModelGone):  # never appended at offsets that start again from 1
        await store.append_feedback("m", "late", "{}", now=T0)

    known = HeldCounters(log_last=3, sequence=before.sequence, token=old, decisions=3)
    offer = OfferedSnapshot(sequence=before.sequence, version=3, blob=b"v3", keep=5)
    assert await store.hold_model("m", known=known, offer=offer, now=T0)
    await store.save_model("m", "record", replace=False)
    await store.save_model("m", "other", replace=False)
    assert await store.load_models() == {"m": "record"}
    (saved,) = await store.list_checkpoints("m")
    assert (saved.offset, saved.version) == (3, 3) and saved.sequence > before.sequence
    assert await store.load_checkpoint("m", saved.sequence) == b"v3"
    assert (await store.append_feedback("m", "late", "{}", now=T0)).offset == 4
    assert (await store.log_bounds("m")).decisions >= 3
    with pytest.raises(FencedOut):  # the learner from before the loss cannot write
        await store.save_checkpoint(
            "m", version=9, blob=b"stale", keep=5, now=T0, offset=4, acked_at=T0, token=old
        )
    new = await store.acquire_lease("m", "b", ttl_seconds=30, now=T0)
    assert new is not None and new > old
    # a staler snapshot offered by another process is not saved; a newer one is
    stale = OfferedSnapshot(sequence=before.sequence - 1, version=2, blob=b"v2", keep=5)
    assert not await store.hold_model("m", known=known, offer=stale, now=T0)
    assert len(await store.list_checkpoints("m")) == 1
    newer = OfferedSnapshot(sequence=before.sequence + 5, version=4, blob=b"v4", keep=5)
    await store.hold_model("m", offer=newer, now=T0)
    newest = (await store.list_checkpoints("m"))[0]
    assert (newest.version, newest.offset) == (4, 3)
    assert [e.offset for e in await store.read_log("m", after=3, limit=10)] == [4]
