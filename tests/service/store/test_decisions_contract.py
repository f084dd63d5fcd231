"""Both stores keep one contract for pending decisions: stored, claimed once, expired once."""

from __future__ import annotations

import asyncio

import pytest

from service.store import Store

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


async def test_concurrent_decision_writes_all_land(store: Store) -> None:
    batches = [[(f"e{i}-{j}", f"p{i}-{j}") for j in range(3)] for i in range(20)]
    await asyncio.gather(
        *(store.put_events("m", batch, now=T0, ttl_seconds=10) for batch in batches)
    )
    assert await store.pending_count("m") == 60
    assert (await store.log_bounds("m")).decisions == 60
    found = await store.peek_event("m", "e7-2", now=T0)
    assert (found.status, found.payload) == ("pending", "p7-2")


async def test_a_decision_rewritten_uncounted_keeps_the_count(store: Store) -> None:
    """An activation rewrites a pending decision: new payload and deadline, counted once."""
    await store.hold_model("m")
    await store.put_events("m", [("e", "deferred")], now=T0, ttl_seconds=5)
    await store.put_events("m", [("e", "active")], now=T0 + 4, ttl_seconds=5, counted=False)
    assert (await store.log_bounds("m")).decisions == 1
    assert await store.pending_count("m") == 1
    found = await store.peek_event("m", "e", now=T0 + 8)  # past the first deadline
    assert (found.status, found.payload) == ("pending", "active")
    await store.put_events("m", [("f", "p"), ("g", "q")], now=T0, ttl_seconds=5)
    assert (await store.log_bounds("m")).decisions == 3


async def test_a_decision_rewritten_expires_at_its_new_deadline_only(store: Store) -> None:
    """The sweep that passes a decision's first deadline leaves it, rewritten since, pending;
    its first keep-until does not delete it; its new deadline expires it, once."""
    await store.hold_model("m")
    await store.put_events("m", [("e", "deferred"), ("x", "other")], now=T0, ttl_seconds=5)
    await store.put_events("m", [("e", "active")], now=T0 + 4, ttl_seconds=600, counted=False)
    assert await store.expire_events("m", now=T0 + 6, limit=10, log=True) == 1  # x only
    first_keep_until = T0 + 5 + 300
    assert await store.expire_events("m", now=first_keep_until + 1, limit=10, log=True) == 0
    found = await store.peek_event("m", "e", now=first_keep_until + 1)
    assert (found.status, found.payload) == ("pending", "active")
    assert await store.expire_events("m", now=T0 + 605, limit=10, log=True) == 1
    assert await store.expire_events("m", now=T0 + 606, limit=10, log=True) == 0
    entries = await store.read_log("m", after=0, limit=10)
    assert [(e.event_id, e.decision, e.feedback) for e in entries] == [
        ("x", "other", None),
        ("e", "active", None),
    ]


async def test_several_decisions_are_looked_up_at_once_in_order(store: Store) -> None:
    """``peek_events``: each id's ``peek_event``, in the order asked (a retried batch
    predict finds the decisions it stored the first time)."""
    await store.hold_model("m")
    await store.put_events("m", [("a", "pa"), ("b", "pb"), ("c", "pc")], now=T0, ttl_seconds=10)
    await store.append_feedback("m", "b", "{}", now=T0)
    found = await store.peek_events("m", ["c", "nope", "b", "a"], now=T0 + 1)
    assert [(f.status, f.payload) for f in found] == [
        ("pending", "pc"), ("unknown", None), ("duplicate", None), ("pending", "pa"),
    ]  # fmt: skip
    assert await store.peek_events("m", [], now=T0) == []


async def test_decisions_under_given_ids_are_stored_only_while_every_id_is_free(
    store: Store,
) -> None:
    """``put_new_events`` (issue 41: one event id sent to two processes at once): stored
    and counted when no id is known, else nothing stored and what each id holds."""
    await store.hold_model("m")
    stored = await store.put_new_events("m", [("g1", "p1"), ("g2", "p2")], now=T0, ttl_seconds=5)
    assert stored == []
    assert (await store.log_bounds("m")).decisions == 2
    taken = await store.put_new_events("m", [("g2", "x"), ("g3", "p3")], now=T0, ttl_seconds=5)
    assert [(f.status, f.payload) for f in taken] == [("pending", "p2"), ("unknown", None)]
    assert (await store.peek_event("m", "g3", now=T0)).status == "unknown"  # none stored
    assert (await store.log_bounds("m")).decisions == 2
    await store.append_feedback("m", "g1", "{}", now=T0 + 1)
    used = await store.put_new_events("m", [("g1", "again")], now=T0 + 1, ttl_seconds=5)
    assert [f.status for f in used] == ["duplicate"]
    late = await store.put_new_events("m", [("g2", "again")], now=T0 + 6, ttl_seconds=5)
    assert [f.status for f in late] == ["expired"]  # past its deadline, not yet swept
    assert await store.expire_events("m", now=T0 + 6, limit=10, log=False) == 1
    assert await store.put_new_events("m", [], now=T0, ttl_seconds=5) == []


async def test_concurrent_decisions_under_one_given_id_store_one(store: Store) -> None:
    await store.hold_model("m")
    results = await asyncio.gather(
        *(store.put_new_events("m", [("c", f"p{i}")], now=T0, ttl_seconds=5) for i in range(8))
    )
    winners = [i for i, found in enumerate(results) if not found]
    assert len(winners) == 1
    for found in results:
        assert found == [] or [(f.status, f.payload) for f in found] == [
            ("pending", f"p{winners[0]}")
        ]
    assert (await store.log_bounds("m")).decisions == 1
    assert await store.pending_count("m") == 1
    assert await store.expire_events("m", now=T0 + 6, limit=10, log=True) == 1
    assert len(await store.read_log("m", after=0, limit=10)) == 1


async def test_binary_and_json_decisions_come_back_from_the_log_as_written(store: Store) -> None:
    """The stored decision of this version (binary, hexadecimal text) and of the previous
    one (JSON) keep their text through the store, and the learner decodes both."""
    from banditree.core import Decision
    from banditree.core.codec import decision_payload, decision_record, record_json
    from service.domain.runtime.replay import decode_entries

    await store.hold_model("m")
    decisions = [
        Decision.of_action(f"e{i}", (0.1 * i, -1e300, 5e-324), 4, i % 3, 0.5, 1, i, {})
        for i in range(40)
    ]
    payloads = [
        decision_payload("u", d)
        if i % 2
        else record_json({"uid": "u", "decision": decision_record(d)})
        for i, d in enumerate(decisions)
    ]
    assert payloads[1].startswith("b1:") and payloads[0].startswith("{")
    await store.put_events(
        "m",
        list(zip([d.event_id for d in decisions], payloads, strict=True)),
        now=T0,
        ttl_seconds=10,
    )
    for i, d in enumerate(decisions[:30]):
        claimed = await store.append_feedback("m", d.event_id, f'{{"loss": {i % 2}}}', now=T0 + 1)
        assert (claimed.status, claimed.payload) == ("claimed", payloads[i])
    assert await store.expire_events("m", now=T0 + 20, limit=100, log=True) == 10
    entries = await store.read_log("m", after=0, limit=100)
    assert sorted(e.decision for e in entries) == sorted(payloads)
    pairs = decode_entries(entries, uid="u", default_loss=0.25)
    by_id = {d.event_id: d for d in decisions}
    assert all(
        p is not None and p[0] == by_id[e.event_id] for e, p in zip(entries, pairs, strict=True)
    )


async def test_the_learners_chunk_holds_the_logs_entries(store: Store) -> None:
    """``read_log_chunk`` (the learner's columns) holds what ``read_log`` reads, whatever
    the texts (the separator of SQLite's one-row read included, an empty feedback) and
    with expiries (no feedback) among them."""
    from service.store import LogChunk

    await store.hold_model("m")
    odd = ["p", "a\x1eb", "", "=x", "é\x00", '{"uid": "u"}', "b1:00"]
    events = [(f"e{i}", odd[i % len(odd)]) for i in range(30)]
    events.append(("id\x1esep", "p"))
    await store.put_events("m", events, now=T0, ttl_seconds=10)
    feedbacks = ["", '{"loss": 0.5}', "=", "\x1e", '{"loss":1.0,"losses":null,"label":null}']
    for i, (event_id, _) in enumerate(events[:24]):
        fb = feedbacks[i % len(feedbacks)]
        assert (await store.append_feedback("m", event_id, fb, now=T0 + i / 7)).status == "claimed"
    assert await store.expire_events("m", now=T0 + 20, limit=100, log=True) == 7
    for after, limit in [(0, 100), (0, 5), (3, 10), (20, 3), (31, 10), (40, 10)]:
        entries = await store.read_log("m", after=after, limit=limit)
        chunk = await store.read_log_chunk("m", after=after, limit=limit)
        assert chunk == LogChunk.of(entries) and chunk.entries() == entries
        assert len(chunk) == len(entries)
    plain = [(f"p{i}", "b1:00") for i in range(10)]  # a chunk SQLite reads in one row
    await store.put_events("m", plain, now=T0, ttl_seconds=10)
    for i, (event_id, _) in enumerate(plain):
        await store.append_feedback("m", event_id, '{"loss":1.0}', now=T0 + 0.1 * i)
    entries = await store.read_log("m", after=31, limit=100)
    chunk = await store.read_log_chunk("m", after=31, limit=100)
    assert len(entries) == 10 and chunk.entries() == entries
    assert chunk.after(35).offsets == [36, 37, 38, 39, 40, 41] == chunk[4:].offsets
