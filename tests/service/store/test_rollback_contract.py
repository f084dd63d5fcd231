"""Both stores: a log behind an offset the caller saw is refused, a new epoch re-holds."""

from __future__ import annotations

import pytest

from service.store import HeldCounters, ModelGone, Store, StoreBehind

pytestmark = pytest.mark.anyio

T0 = 1_000_000.0


async def test_feedback_on_a_log_behind_what_was_seen_is_refused_untouched(store: Store) -> None:
    await store.hold_model("m")
    await store.save_model("m", "{}")
    await store.put_events("m", [("e1", "p"), ("e2", "q")], now=T0, ttl_seconds=10)
    assert (await store.append_feedback("m", "e1", "{}", now=T0, seen=0)).offset == 1
    with pytest.raises(StoreBehind, match="ends at 1, before offset 5"):
        await store.append_feedback("m", "e2", "{}", now=T0, seen=5)
    # nothing was claimed or appended: the decision is still pending, the log at 1
    assert (await store.peek_event("m", "e2", now=T0)).status == "pending"
    assert (await store.log_bounds("m")).last == 1
    assert (await store.append_feedback("m", "e2", "{}", now=T0, seen=1)).offset == 2


async def test_a_new_epoch_forgets_every_hold_so_counters_are_raised(store: Store) -> None:
    await store.hold_model("m")
    await store.save_model("m", "{}")
    epoch = await store.epoch()
    assert await store.new_epoch() != epoch
    assert await store.epoch() != epoch
    await store.put_events("m", [("e", "p")], now=T0, ttl_seconds=10)
    with pytest.raises(ModelGone):  # until a process holds it again
        await store.append_feedback("m", "e", "{}", now=T0)
    assert await store.load_model("m") == "{}"  # the records stay
    assert await store.hold_model("m", known=HeldCounters(log_last=7))
    assert (await store.append_feedback("m", "e", "{}", now=T0, seen=7)).offset == 8


async def test_record_saves_and_deletes_are_counted_and_a_new_epoch_raises_the_count(
    store: Store,
) -> None:
    start = await store.changes()
    assert await store.save_model("a", "{}") == start + 1
    assert await store.save_model("a", "{}", replace=False) == start + 2
    assert await store.delete_model("a") == start + 3
    assert await store.changes() == start + 3
    await store.new_epoch(changes=start + 10)
    assert await store.changes() == start + 10
    await store.new_epoch(changes=0)  # never back
    assert await store.changes() == start + 10


async def test_expiry_logged_on_a_log_behind_what_was_seen_is_refused_untouched(
    store: Store,
) -> None:
    await store.hold_model("m")
    await store.put_events("m", [("e1", "p")], now=T0, ttl_seconds=1)
    with pytest.raises(StoreBehind):
        await store.expire_events("m", now=T0 + 5, limit=10, log=True, seen=3)
    assert await store.pending_count("m") == 1 and (await store.log_bounds("m")).last == 0
    # without logging no offset is given out: nothing to refuse
    assert await store.expire_events("m", now=T0 + 5, limit=10, log=False, seen=3) == 1
