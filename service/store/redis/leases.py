"""The learner lease in Redis: ``lease:{name}`` holds ``holder|token`` with its expiry.

Fencing tokens are ``token`` in ``ctr:{name}``; a lease is taken, renewed and given back
by Lua scripts (``ACQUIRE``, ``RENEW``), and idle learners are scanned with ``IDLE``.
Learner processes announce themselves in the sorted set ``learners`` (``{global}:learners``
in a cluster): member the holder, score the time its heartbeat lapses.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from service.store.base import IdleLearner, IdleVerdict, Lease
from service.store.protocols import LeaseStore
from service.store.redis import cluster
from service.store.redis.client import RedisBase, gone, text, unavailable


class RedisLeases(RedisBase, LeaseStore):
    """Take, renew, scan and give back learner leases."""

    @unavailable
    async def acquire_lease(
        self, name: str, holder: str, *, ttl_seconds: float, now: float
    ) -> int | None:
        keys = [self._key("lease", name), self._key("ctr", name)]
        reply = await self._run("ACQUIRE", keys, [holder, max(1, int(ttl_seconds * 1000))])
        token = int(reply[0])
        if token == -2:
            raise gone(name)
        if token < 0:
            return None
        self._lease_marks[name] = (token, text(reply[1]))
        return token

    @unavailable
    async def renew_lease(
        self, name: str, holder: str, token: int, *, ttl_seconds: float, now: float
    ) -> bool:
        args = [f"{holder}|{token}", max(1, int(ttl_seconds * 1000))]
        return bool(await self._run("RENEW", [self._key("lease", name)], args))

    @unavailable
    async def scan_idle(
        self, holder: str, idle: Sequence[IdleLearner], *, ttl_seconds: float, now: float
    ) -> dict[str, IdleVerdict]:
        script, ttl_ms = self._scripts["IDLE"], max(1, int(ttl_seconds * 1000))
        if self.cluster:
            calls = [
                ([self._key(kind, learner.name) for kind in ("lease", "ctr", "req")],
                 [f"{holder}|{learner.token}", ttl_ms, learner.offset])
                for learner in idle
            ]  # fmt: skip
            replies = await cluster.evalsha_each(self.client, script, calls)
        else:
            replies = await self._idle_pipelined(script, holder, idle, ttl_ms)
        codes: dict[int, IdleVerdict] = {0: "lost", 1: "idle", 2: "work"}
        # a learner whose master failed (a cluster node lost) is woken: it meets the fault
        # on its own calls and waits, and the other masters' learners are renewed
        return {
            learner.name: "work" if isinstance(reply, Exception) else codes[int(reply)]
            for learner, reply in zip(idle, replies, strict=True)
        }

    async def _idle_pipelined(
        self, script: Any, holder: str, idle: Sequence[IdleLearner], ttl_ms: int
    ) -> list[Any]:
        async with self.client.pipeline(transaction=False) as pipe:
            # loaded by the pipeline if Redis lacks it (as AsyncScript.__call__ does)
            pipe.scripts.add(script)
            for learner in idle:
                keys = [self._key(kind, learner.name) for kind in ("lease", "ctr", "req")]
                args: list[str | int] = [f"{holder}|{learner.token}", ttl_ms, learner.offset]
                pipe.evalsha(script.sha, len(keys), *keys, *args)
            return list(await pipe.execute())

    @unavailable
    async def release_lease(self, name: str, holder: str, token: int) -> None:
        await self._run("RENEW", [self._key("lease", name)], [f"{holder}|{token}", 0])

    @unavailable
    async def lease(self, name: str, *, now: float) -> Lease | None:
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.get(self._key("lease", name))
            pipe.pttl(self._key("lease", name))
            value, ttl_ms = await pipe.execute()
        if value is None:
            return None
        holder, token = text(value).rsplit("|", 1)
        return Lease(holder, int(token), now + max(0, int(ttl_ms)) / 1000)

    @unavailable
    async def announce_learner(
        self, holder: str, *, ttl_seconds: float, now: float
    ) -> tuple[int, int]:
        key = self._learners_key
        # one slot in a cluster too: both keys are tagged {global}
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.zadd(key, {holder: now + ttl_seconds})
            pipe.zremrangebyscore(key, "-inf", f"({now!r}")
            pipe.zcard(key)
            pipe.hlen(self._models_key)
            _, _, live, models = await pipe.execute()
        return max(1, int(live)), int(models)

    @unavailable
    async def withdraw_learner(self, holder: str) -> None:
        await self.client.zrem(self._learners_key, holder)
