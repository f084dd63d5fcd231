"""Pending decisions in Redis: ``ev:{name}:<id>``, ``done:{name}:<id>`` and ``due:{name}``.

The value of a pending decision is ``deadline|keep_until|payload`` and expires at its
keep-until; a claimed one leaves a tombstone ``used`` / ``expired`` under ``done``.  The
writes of concurrent predictions travel together (:mod:`.decision_writes`); a feedback
is looked up and claimed on the wire connection.
"""

from __future__ import annotations

import asyncio
from typing import cast

from service.store.base import (
    EventLookup,
    EventStatus,
    StoreBehind,
    event_deadlines,
    wait_within_budget,
)
from service.store.protocols import DecisionStore
from service.store.redis.client import RedisBase, gone, text, unavailable


class RedisDecisions(RedisBase, DecisionStore):
    """Store, look up, claim and expire pending decisions."""

    async def put_events(
        self,
        name: str,
        events: list[tuple[str, str]],
        *,
        now: float,
        ttl_seconds: float,
        counted: bool = True,
    ) -> None:
        """Stored with the decisions of concurrent predictions (:mod:`.decision_writes`)."""
        if events:
            stored = self.queue_events(
                name, events, now=now, ttl_seconds=ttl_seconds, counted=counted
            )
            await wait_within_budget(stored)

    def queue_events(
        self,
        name: str,
        events: list[tuple[str, str]],
        *,
        now: float,
        ttl_seconds: float,
        counted: bool = True,
    ) -> asyncio.Future[None]:
        """Queued with the decisions of concurrent predictions (:mod:`.decision_writes`)."""
        if not events:
            done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            done.set_result(None)
            return done
        deadline, keep_until = event_deadlines(now, ttl_seconds)
        head = f"{deadline!r}|{keep_until!r}|"
        return self._decisions.put(
            name, repr(deadline), int((keep_until - now) * 1000),
            [head + payload for _, payload in events], [event_id for event_id, _ in events],
            counted=counted,
        )  # fmt: skip

    @unavailable
    async def put_new_events(
        self,
        name: str,
        events: list[tuple[str, str]],
        *,
        now: float,
        ttl_seconds: float,
    ) -> list[EventLookup]:
        """One script (:data:`~.scripts.PUT_NEW`): the ids looked up and the decisions
        stored in one atomic step on the model's slot."""
        if not events:
            return []
        deadline, keep_until = event_deadlines(now, ttl_seconds)
        head = f"{deadline!r}|{keep_until!r}|"
        args = [
            self._key("ev", name) + ":", self._key("done", name) + ":", repr(deadline),
            max(1, int((keep_until - now) * 1000)), len(events),
            *(event_id for event_id, _ in events), *(head + payload for _, payload in events),
        ]  # fmt: skip
        reply = await self._run("PUT_NEW", [self._key("due", name), self._key("ctr", name)], args)
        return [_found(text(item), now) for item in reply]

    @unavailable
    async def peek_event(self, name: str, event_id: str, *, now: float) -> EventLookup:
        keys = self._key("ev", name, event_id), self._key("done", name, event_id)
        if self._wire is not None:
            value, mark = await self._wire.execute(("GET", keys[0]), ("GET", keys[1]))
        else:
            async with self.client.pipeline(transaction=False) as pipe:
                pipe.get(keys[0])
                pipe.get(keys[1])
                value, mark = await pipe.execute()
        return _lookup(None if value is None else text(value), mark, now)

    @unavailable
    async def append_feedback(
        self, name: str, event_id: str, feedback: str, *, now: float, seen: int = 0
    ) -> EventLookup:
        keys = [
            self._key(kind, name, event_id) if kind in ("ev", "done") else self._key(kind, name)
            for kind in ("ev", "done", "due", "log", "ctr")
        ]
        args = [event_id, repr(now), feedback, seen]
        reply = await self._claim(keys, args)
        status = text(reply[0])
        if status == "gone":
            raise gone(name)
        if status == "behind":
            raise StoreBehind(
                f"the store's log of model {name!r} ends at {int(reply[1])}, before offset "
                f"{seen} this process was given: redis came back from an older snapshot"
            )
        if status != "claimed":
            return EventLookup(cast(EventStatus, status))
        return EventLookup("claimed", text(reply[1]), int(reply[2]))

    @unavailable
    async def expire_events(
        self, name: str, *, now: float, limit: int, log: bool, seen: int = 0
    ) -> int:
        keys = [self._key("due", name), self._key("log", name), self._key("ctr", name)]
        args = [
            repr(now), limit, "1" if log else "0",
            self._key("ev", name) + ":", self._key("done", name) + ":", seen,
        ]  # fmt: skip
        expired = int(await self._run("EXPIRE", keys, args))
        if expired == -2:
            raise StoreBehind(
                f"the store's log of model {name!r} ends before offset {seen} this process "
                "was given: redis came back from an older snapshot"
            )
        if expired < 0:
            raise gone(name)
        return expired

    @unavailable
    async def pending_count(self, name: str) -> int:
        return int(await self.client.zcard(self._key("due", name)))


def _lookup(value: str | None, mark: bytes | None, now: float) -> EventLookup:
    """What an id holds: its pending value ``deadline|keep_until|payload``, else its
    tombstone (``used`` / ``expired``), else nothing."""
    if value is not None:
        deadline, _, payload = value.split("|", 2)
        return EventLookup("pending" if now <= float(deadline) else "expired", payload)
    if mark is not None:
        return EventLookup("duplicate" if mark == b"used" else "expired")
    return EventLookup("unknown")


def _found(item: str, now: float) -> EventLookup:
    """One id's item of a :data:`~.scripts.PUT_NEW` reply."""
    if item.startswith("v"):
        return _lookup(item[1:], None, now)
    if item.startswith("d"):
        return _lookup(None, item[1:].encode(), now)
    return EventLookup("unknown")
