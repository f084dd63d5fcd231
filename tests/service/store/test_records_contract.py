"""Both stores keep one contract for model records, held models and a loss of their data."""

from __future__ import annotations

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
