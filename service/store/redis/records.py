"""Model records in Redis (the ``models`` hash), and which models it holds (``ctr`` marks)."""

from __future__ import annotations

import uuid
from typing import Any

from service.store.base import (
    CREATE_CLAIM_SECONDS,
    HeldCounters,
    NameTaken,
    OfferedSnapshot,
    TooManyModels,
)
from service.store.protocols import RecordStore
from service.store.redis.client import RedisBase, text, unavailable

#: every key of a model, deleted with the model (its record aside); pending decisions
#: (``ev``, ``done``) expire on their own.  ``creates``: the claims of its creates
#: (:meth:`RedisRecords.end_create`), first
MODEL_KEYS = ("creates", "due", "log", "ctr", "lease", "ckpt", "ckpts", "req", "sync")


class RedisRecords(RedisBase, RecordStore):
    """Hold, save, load and delete model records."""

    @unavailable
    async def hold_model(
        self,
        name: str,
        *,
        known: HeldCounters | None = None,
        offer: OfferedSnapshot | None = None,
        now: float = 0.0,
    ) -> bool:
        k = known or HeldCounters()
        keys = [self._key(kind, name) for kind in ("ctr", "ckpt", "ckpts", "log", "lease")]
        args: list[Any] = [
            uuid.uuid4().hex, k.log_last, k.sequence, k.token, k.decisions, repr(now),
            self.prefix + "snapshots", name,
        ]  # fmt: skip
        if offer is not None:
            args += [offer.sequence, offer.version, len(offer.blob), offer.keep, offer.blob,
                     self.keep_bytes or 0]  # fmt: skip
        else:
            args += [0, 0, 0, 1, b"", 0]
        newly, _ = await self._run("HOLD", keys, args)
        return bool(newly)

    @unavailable
    async def new_epoch(self, *, changes: int = 0) -> str:
        # every hold first, then the epoch: a process that sees the new epoch holds its
        # models again (an older epoch with a model not held is only a deleted model)
        for name in await self.client.hkeys(self._models_key):
            await self.client.hdel(self._key("ctr", text(name)), "mark")
        if await self.changes() < changes:
            await self.client.set(self._changes_key, changes)
        epoch = uuid.uuid4().hex
        await self.client.set(self._epoch_key, epoch.encode())
        return epoch

    @unavailable
    async def changes(self) -> int:
        return int(await self.client.get(self._changes_key) or 0)

    @unavailable
    async def save_model(
        self, name: str, record: str, *, replace: bool = True, max_models: int | None = None
    ) -> int:
        if max_models is not None:  # counted and written in one script (one key: any slot)
            held = int(
                await self._run(
                    "SAVE_CAPPED", [self._models_key], [name, record.encode(), max_models]
                )
            )
            if held == -2:
                raise NameTaken(name)
            if held >= 0:
                raise TooManyModels(held, max_models)
            return int(await self.client.incr(self._changes_key))
        if replace:
            await self.client.hset(self._models_key, name, record.encode())
        else:
            await self.client.hsetnx(self._models_key, name, record.encode())
        return int(await self.client.incr(self._changes_key))

    @unavailable
    async def begin_create(self, name: str, token: str, *, now: float) -> None:
        await self.client.hset(self._key("creates", name), token, repr(now + CREATE_CLAIM_SECONDS))

    @unavailable
    async def end_create(self, name: str, token: str, *, recorded: bool, now: float) -> bool:
        keys = [self._key(kind, name) for kind in MODEL_KEYS]
        return bool(await self._run("END_CREATE", keys, [token, int(recorded), repr(now)]))

    @unavailable
    async def load_model(self, name: str) -> str | None:
        value = await self.client.hget(self._models_key, name)
        return None if value is None else text(value)

    @unavailable
    async def load_models(self) -> dict[str, str]:
        found = await self.client.hgetall(self._models_key)
        return {text(k): text(v) for k, v in sorted(found.items())}

    @unavailable
    async def delete_model(self, name: str) -> int:
        if self.cluster:  # the record and the model's keys live in two slots: keys first
            await self.client.delete(*(self._key(kind, name) for kind in MODEL_KEYS))
            await self.client.hdel(self._models_key, name)
            return int(await self.client.incr(self._changes_key))
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.hdel(self._models_key, name)
            pipe.delete(*(self._key(kind, name) for kind in MODEL_KEYS))
            await pipe.execute()
        return int(await self.client.incr(self._changes_key))
