"""Redis store: pending events with TTL, model records and checkpoint versions.

Keys (all under ``prefix``): ``models`` (hash name -> record), ``ev:<name>:<id>``
(``deadline|keep_until|payload``, expires at ``keep_until``), ``done:<name>:<id>``
(tombstone ``used`` or ``expired``), ``due:<name>`` (sorted set of deadlines, swept
by every server, so expiry needs no keyspace notifications), ``ckpt:<name>`` (hash
sequence -> safetensors bytes), ``ckpts:<name>`` (sorted set of checkpoint infos by
sequence), ``ckptseq:<name>`` (sequence counter).

Storing a batch of events is one Lua script (the values and their deadlines, one
command and one reply per predict: a MULTI/EXEC pipeline costs the client several
times the CPU).  A claim is one Lua script (read, delete, tombstone), so an event is
taken exactly once even when several servers share the Redis.  A checkpoint save and its
retention trim are one MULTI/EXEC transaction guarded by WATCH.
"""

from __future__ import annotations

import json
from typing import Any

from redis.asyncio import Redis
from redis.exceptions import WatchError

from service.store.base import CheckpointInfo, EventLookup, Store, event_deadlines

_PUT = """
local n = #KEYS - 1
for i = 1, n do
  redis.call('SET', KEYS[i + 1], ARGV[i + 2], 'PX', ARGV[2])
  redis.call('ZADD', KEYS[1], ARGV[1], ARGV[n + i + 2])
end
return n
"""

_CLAIM = """
local v = redis.call('GET', KEYS[1])
if not v then
  if ARGV[3] == 'expire' then redis.call('ZREM', KEYS[3], ARGV[1]) end
  local t = redis.call('GET', KEYS[2])
  if t == 'used' then return {'duplicate'} end
  if t then return {'expired'} end
  return {'unknown'}
end
local a = string.find(v, '|', 1, true)
local b = string.find(v, '|', a + 1, true)
local deadline = tonumber(string.sub(v, 1, a - 1))
local keep_until = tonumber(string.sub(v, a + 1, b - 1))
local now = tonumber(ARGV[2])
local mark
if ARGV[3] == 'claim' then
  if now > deadline then return {'expired'} end
  mark = 'used'
else
  if now <= deadline then return {'pending'} end
  mark = 'expired'
end
redis.call('DEL', KEYS[1])
redis.call('ZREM', KEYS[3], ARGV[1])
local ttl_ms = math.max(1, math.floor((keep_until - now) * 1000))
redis.call('SET', KEYS[2], mark, 'PX', ttl_ms)
if mark == 'used' then return {'claimed', string.sub(v, b + 1)} end
return {'expired', string.sub(v, b + 1)}
"""


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _split(value: bytes) -> tuple[float, float, str]:
    deadline, keep_until, payload = value.decode().split("|", 2)
    return float(deadline), float(keep_until), payload


class RedisStore(Store):
    """Events, records and checkpoints in Redis, shared by every server pointed at it."""

    def __init__(self, client: Redis, *, prefix: str = "banditree:") -> None:
        self.client = client
        self.prefix = prefix
        self._claim = client.register_script(_CLAIM)
        self._put = client.register_script(_PUT)

    @classmethod
    def from_url(cls, url: str, *, prefix: str = "banditree:") -> RedisStore:
        return cls(Redis.from_url(url, decode_responses=False), prefix=prefix)

    def _key(self, *parts: str) -> str:
        return self.prefix + ":".join(parts)

    async def ping(self) -> None:
        await self.client.ping()

    async def close(self) -> None:
        await self.client.aclose()

    # -- model records -------------------------------------------------------------
    async def save_model(self, name: str, record: str) -> None:
        await self.client.hset(self._key("models"), name, record.encode())

    async def load_model(self, name: str) -> str | None:
        value = await self.client.hget(self._key("models"), name)
        return None if value is None else _text(value)

    async def load_models(self) -> dict[str, str]:
        found = await self.client.hgetall(self._key("models"))
        return {_text(k): _text(v) for k, v in sorted(found.items())}

    async def delete_model(self, name: str) -> None:
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.hdel(self._key("models"), name)
            pipe.delete(
                self._key("ckpt", name),
                self._key("ckpts", name),
                self._key("ckptseq", name),
                self._key("due", name),
            )
            await pipe.execute()

    # -- pending events --------------------------------------------------------------
    async def put_events(
        self, name: str, events: list[tuple[str, str]], *, now: float, ttl_seconds: float
    ) -> None:
        if not events:
            return
        deadline, keep_until = event_deadlines(now, ttl_seconds)
        expire_ms = int((keep_until - now) * 1000)
        head = f"{deadline!r}|{keep_until!r}|"
        keys = [self._key("due", name)]
        keys.extend(self._key("ev", name, event_id) for event_id, _ in events)
        args: list[str | int] = [repr(deadline), expire_ms]
        args.extend(head + payload for _, payload in events)
        args.extend(event_id for event_id, _ in events)
        await self._put(keys=keys, args=args)

    async def peek_event(self, name: str, event_id: str, *, now: float) -> EventLookup:
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.get(self._key("ev", name, event_id))
            pipe.get(self._key("done", name, event_id))
            value, mark = await pipe.execute()
        if value is not None:
            deadline, _, payload = _split(value)
            return EventLookup("pending" if now <= deadline else "expired", payload)
        if mark is not None:
            return EventLookup("duplicate" if mark == b"used" else "expired")
        return EventLookup("unknown")

    async def _run_claim(self, name: str, event_id: str, now: float, mode: str) -> EventLookup:
        keys = [
            self._key("ev", name, event_id),
            self._key("done", name, event_id),
            self._key("due", name),
        ]
        reply: list[Any] = await self._claim(keys=keys, args=[event_id, repr(now), mode])
        status = _text(reply[0])
        payload = _text(reply[1]) if len(reply) > 1 else None
        return EventLookup(status, payload)  # type: ignore[arg-type]

    async def claim_event(self, name: str, event_id: str, *, now: float) -> EventLookup:
        return await self._run_claim(name, event_id, now, "claim")

    async def claim_expired(self, name: str, *, now: float, limit: int) -> list[str]:
        due = await self.client.zrangebyscore(
            self._key("due", name), "-inf", f"({now!r}", start=0, num=limit
        )
        taken = []
        for raw in due:
            found = await self._run_claim(name, _text(raw), now, "expire")
            if found.status == "expired" and found.payload is not None:
                taken.append(found.payload)
        return taken

    async def pending_count(self, name: str) -> int:
        return int(await self.client.zcard(self._key("due", name)))

    # -- checkpoints -----------------------------------------------------------------
    async def save_checkpoint(
        self, name: str, *, version: int, blob: bytes, keep: int, now: float
    ) -> CheckpointInfo:
        index, blobs = self._key("ckpts", name), self._key("ckpt", name)
        sequence = int(await self.client.incr(self._key("ckptseq", name)))
        info = CheckpointInfo(sequence, version, now, len(blob))
        member = json.dumps(info.__dict__, sort_keys=True)
        async with self.client.pipeline(transaction=True) as pipe:
            while True:
                try:
                    await pipe.watch(index)
                    dropped: list[Any] = await pipe.zrange(index, 0, -keep)
                    pipe.multi()
                    pipe.hset(blobs, str(sequence), blob)
                    pipe.zadd(index, {member: sequence})
                    for old in dropped:
                        pipe.zrem(index, old)
                        pipe.hdel(blobs, str(json.loads(old)["sequence"]))
                    await pipe.execute()
                    return info
                except WatchError:
                    continue

    async def list_checkpoints(self, name: str) -> list[CheckpointInfo]:
        members: list[Any] = await self.client.zrevrange(self._key("ckpts", name), 0, -1)
        return [CheckpointInfo(**json.loads(member)) for member in members]

    async def load_checkpoint(self, name: str, sequence: int) -> bytes | None:
        value = await self.client.hget(self._key("ckpt", name), str(sequence))
        return value if isinstance(value, bytes) else None  # decode_responses=False: bytes
