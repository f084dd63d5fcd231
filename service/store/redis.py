"""Redis store: shared by every process pointed at the same Redis.

Keys (under ``prefix``, a model's keys share the hash tag ``{name}``): ``models`` (hash
name -> record), ``ev:{name}:<id>`` (pending decision, expires at its keep-until),
``done:{name}:<id>`` (tombstone ``used`` / ``expired``), ``due:{name}`` (sorted set of
deadlines, swept by every process), ``log:{name}`` (the feedback log, a Stream with ids
``<offset>-0``), ``ctr:{name}`` (hash: ``log_last``, fencing ``token``, checkpoint
``sequence``), ``lease:{name}`` (``holder|token`` with expiry), ``ckpt:{name}`` (hash
sequence -> checkpoint bytes), ``ckpts:{name}`` (sorted set of checkpoint infos),
``req:{name}`` (checkpoint asked for), ``epoch`` (the store's epoch id) and the channel
``snapshots`` (model names).  ``ctr:{name}`` also holds the ``mark`` of a held model.

Every multi-key step is one Lua script (see :mod:`service.store.redis_scripts`), but the
decision writes: those of concurrent predictions go to Redis as one ``MULTI``/``EXEC``
transaction per model, in one round trip, one batch in flight at a time
(:mod:`service.store.redis_decisions`).  Socket
timeouts are short and nothing is retried: when Redis is away a call fails fast with
:class:`StoreUnavailable` and the caller decides (a predict is still answered, a
feedback gets 503).  Durability is Redis's own: with ``appendonly yes`` and
``appendfsync everysec`` at most the last second is at risk if the Redis host dies.
"""

from __future__ import annotations

import asyncio
import functools
import uuid
from collections.abc import Callable, Coroutine, Sequence
from typing import Any, ParamSpec, TypeVar

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.client import PubSub
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.connection import Connection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError

from service.store import redis_cluster as cluster
from service.store import redis_scripts as lua
from service.store.base import (
    CheckpointInfo,
    EventLookup,
    FencedOut,
    HeldCounters,
    IdleLearner,
    IdleVerdict,
    Lease,
    LogBounds,
    LogEntry,
    ModelGone,
    OfferedSnapshot,
    Store,
    StoreUnavailable,
    event_deadlines,
)
from service.store.budget import wait_within_budget, within_budget
from service.store.redis_decisions import DecisionWrites
from service.store.redis_wire import WireConnection, store_error

P = ParamSpec("P")
T = TypeVar("T")


def _unavailable(
    method: Callable[P, Coroutine[Any, Any, T]],
) -> Callable[P, Coroutine[Any, Any, T]]:
    """Turn connection errors and timeouts into :class:`StoreUnavailable`; spend the budget."""

    @functools.wraps(method)
    async def wrapped(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await within_budget(method(*args, **kwargs))
        except cluster.UNAVAILABLE_ERRORS as err:
            raise store_error(err) from err
        except ResponseError as err:  # a demoted master (READONLY), a cluster failing over
            if cluster.transient_reply(err):
                raise store_error(err) from err
            raise

    return wrapped


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def _info(member: Any) -> CheckpointInfo:
    seq, version, created, size, offset, acked, token = _text(member).split("|")
    return CheckpointInfo(
        int(seq), int(version), float(created), int(size), int(offset), float(acked), int(token)
    )


def _wire_connection(client: Redis | RedisCluster) -> WireConnection | None:
    """A connection of its own for the calls of requests (decision writes, a feedback's
    look-up and claim), for a plain TCP Redis with timeouts (not a cluster)."""
    if isinstance(client, RedisCluster):
        return None
    pool = client.connection_pool
    kwargs = pool.connection_kwargs
    if pool.connection_class is not Connection or not kwargs.get("socket_timeout"):
        return None  # TLS, a unix socket or no timeout: the pooled client does them
    return WireConnection(
        kwargs.get("host", "localhost"), int(kwargs.get("port", 6379)),
        timeout_seconds=float(kwargs["socket_timeout"]), db=int(kwargs.get("db") or 0),
        username=kwargs.get("username"), password=kwargs.get("password"),
    )  # fmt: skip


def _socket_timeout(client: RedisCluster) -> float:
    """The socket timeout the cluster client was made with."""
    timeout = client.connection_kwargs.get("socket_timeout")
    return float(timeout) if timeout else 0.25


class RedisStore(Store):
    """Decisions, the log, leases and checkpoints in Redis."""

    def __init__(
        self,
        client: Redis | RedisCluster,
        *,
        prefix: str = "banditree:",
        wait_replicas: int | None = None,
        wait_timeout_ms: int = 100,
    ) -> None:
        self.client: Any = client  # Redis or RedisCluster: the calls used are common to both
        self.prefix = prefix
        self.cluster = isinstance(client, RedisCluster)
        self._models_key = cluster.global_key(prefix, "models", cluster=self.cluster)
        self._epoch_key = cluster.global_key(prefix, "epoch", cluster=self.cluster)
        # replicas a feedback waits for (None: decided at the first ping, by what exists)
        self.wait_replicas = wait_replicas
        self.wait_timeout_ms = wait_timeout_ms
        self._started = False
        self._scripts = {
            name: client.register_script(getattr(lua, name))
            for name in (
                "FEEDBACK", "EXPIRE", "ACQUIRE", "RENEW", "IDLE", "SAVE_CHECKPOINT",
                "HOLD",
            )
        }  # fmt: skip
        # model -> (token, mark it was issued under): a token from before a loss is fenced
        self._lease_marks: dict[str, tuple[int, str]] = {}
        self._pubsub: PubSub | None = None
        # one kept-open connection for the calls of every request (None: the pool does them)
        self._wire = _wire_connection(client)
        self._decisions = DecisionWrites(self.client, self._key, self._wire)
        self._slot_wires: cluster.SlotWires | None = None
        if isinstance(client, RedisCluster):
            self._slot_wires = cluster.SlotWires(client, _socket_timeout(client))

    @classmethod
    def from_url(
        cls,
        url: str,
        *,
        prefix: str = "banditree:",
        timeout_seconds: float = 0.25,
        wait_replicas: int | None = None,
        wait_timeout_ms: int = 100,
    ) -> RedisStore:
        """A store on ``url`` (a single Redis or any node of a cluster); every socket
        operation gives up after ``timeout_seconds``.  A feedback waits for
        ``wait_replicas`` replicas (None: one if the Redis has any) ``wait_timeout_ms``."""
        waits = {"wait_replicas": wait_replicas, "wait_timeout_ms": wait_timeout_ms}
        if cluster.is_cluster(url, timeout_seconds):
            client = cluster.cluster_client(url, timeout_seconds)
            return cls(client, prefix=prefix, **waits)  # type: ignore[arg-type]
        pool = BlockingConnectionPool.from_url(
            url,
            max_connections=64,
            timeout=timeout_seconds,  # waiting for a free connection
            decode_responses=False,
            socket_timeout=timeout_seconds,
            socket_connect_timeout=timeout_seconds,
            # one immediate retry on a dropped connection (a pooled socket left over from
            # before a Redis restart); never on a timeout, so a hung Redis costs one timeout
            retry=Retry(NoBackoff(), 1, supported_errors=(RedisConnectionError,)),
        )
        return cls(Redis(connection_pool=pool), prefix=prefix, **waits)  # type: ignore[arg-type]

    def _key(self, kind: str, name: str, *rest: str) -> str:
        return f"{self.prefix}{kind}:{{{name}}}" + "".join(f":{part}" for part in rest)

    async def _run(self, script: str, keys: list[str], args: list[Any]) -> Any:
        return await self._scripts[script](keys=keys, args=args)

    async def _claim(self, keys: list[str], args: list[Any]) -> Any:
        """The FEEDBACK script; when feedback waits for replicas, then ``WAIT`` on the same
        connection: a claim no replica acknowledged in time is StoreUnavailable (503).

        The claim stays on the master then: a retry finds it (409) unless the master
        died before any replica had it, then the retry claims the decision again.
        """
        lua, waits = self._scripts["FEEDBACK"], self.wait_replicas or 0
        commands: list[tuple[Any, ...]] = [("EVALSHA", lua.sha, len(keys), *keys, *args)]
        if waits:
            commands.append(("WAIT", waits, self.wait_timeout_ms))
        try:
            replies = await self._one_connection(keys[0], commands)
        except ResponseError as err:
            if not str(err).startswith("NOSCRIPT"):
                raise
            # Redis restarted (or flushed its scripts): send the script itself
            commands[0] = ("EVAL", lua.script, len(keys), *keys, *args)
            replies = await self._one_connection(keys[0], commands)
        if waits and _text(replies[0][0]) == "claimed" and int(replies[1]) < waits:
            raise StoreUnavailable(
                f"redis: the feedback reached the master but {waits} replica(s) did not "
                f"acknowledge it within {self.wait_timeout_ms} ms; retry it"
            )
        return replies[0]

    async def _one_connection(self, key: str, commands: list[tuple[Any, ...]]) -> list[Any]:
        """``commands`` on one connection (the master of ``key``'s slot in a cluster)."""
        if self._slot_wires is not None:
            return await self._slot_wires.execute(key, *commands)
        if self._wire is not None:
            return await self._wire.execute(*commands)
        async with self.client.pipeline(transaction=False) as pipe:
            for command in commands:
                pipe.execute_command(*command)
            return list(await pipe.execute())

    @_unavailable
    async def ping(self) -> None:
        await self.client.ping()
        if not self._started:  # once: what the Redis is decides what a feedback waits for
            if self.cluster:
                await cluster.migrate_global_keys(self.client, self.prefix)
            if self.wait_replicas is None:
                self.wait_replicas = min(1, await self._replicas())
            self._started = True

    async def _replicas(self) -> int:
        if self.cluster:
            return await cluster.replicas_of_masters(self.client)
        return int((await self.client.info("replication")).get("connected_slaves", 0))

    async def close(self) -> None:
        await self._decisions.close()  # writes still travelling (their waiters get 503)
        if self._pubsub is not None:
            await self._pubsub.aclose()
        if self._slot_wires is not None:
            self._slot_wires.close()
        await self.client.aclose()
        if not self.cluster:
            await self.client.connection_pool.disconnect()  # the client does not own its pool

    @_unavailable
    async def epoch(self) -> str:
        key = self._epoch_key
        value = await self.client.get(key)
        if value is None:  # first use, or the data was lost: the first process to ask writes it
            await self.client.set(key, uuid.uuid4().hex.encode(), nx=True)
            value = await self.client.get(key)
        return _text(value)

    # -- model records -------------------------------------------------------------
    @_unavailable
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
            args += [offer.sequence, offer.version, len(offer.blob), offer.keep, offer.blob]
        else:
            args += [0, 0, 0, 1, b""]
        newly, _ = await self._run("HOLD", keys, args)
        return bool(newly)

    @_unavailable
    async def save_model(self, name: str, record: str, *, replace: bool = True) -> None:
        if replace:
            await self.client.hset(self._models_key, name, record.encode())
        else:
            await self.client.hsetnx(self._models_key, name, record.encode())

    @_unavailable
    async def load_model(self, name: str) -> str | None:
        value = await self.client.hget(self._models_key, name)
        return None if value is None else _text(value)

    @_unavailable
    async def load_models(self) -> dict[str, str]:
        found = await self.client.hgetall(self._models_key)
        return {_text(k): _text(v) for k, v in sorted(found.items())}

    @_unavailable
    async def delete_model(self, name: str) -> None:
        kinds = ("due", "log", "ctr", "lease", "ckpt", "ckpts", "req")
        if self.cluster:  # the record and the model's keys live in two slots: keys first
            await self.client.delete(*(self._key(kind, name) for kind in kinds))
            await self.client.hdel(self._models_key, name)
            return
        async with self.client.pipeline(transaction=True) as pipe:
            pipe.hdel(self._models_key, name)
            pipe.delete(*(self._key(kind, name) for kind in kinds))
            await pipe.execute()

    # -- pending decisions -----------------------------------------------------------
    async def put_events(
        self, name: str, events: list[tuple[str, str]], *, now: float, ttl_seconds: float
    ) -> None:
        """Stored with the decisions of concurrent predictions (:mod:`.redis_decisions`)."""
        if not events:
            return
        deadline, keep_until = event_deadlines(now, ttl_seconds)
        head = f"{deadline!r}|{keep_until!r}|"
        stored = self._decisions.put(
            name, repr(deadline), int((keep_until - now) * 1000),
            [head + payload for _, payload in events], [event_id for event_id, _ in events],
        )  # fmt: skip
        await wait_within_budget(stored)

    @_unavailable
    async def peek_event(self, name: str, event_id: str, *, now: float) -> EventLookup:
        keys = self._key("ev", name, event_id), self._key("done", name, event_id)
        if self._wire is not None:
            value, mark = await self._wire.execute(("GET", keys[0]), ("GET", keys[1]))
        else:
            async with self.client.pipeline(transaction=False) as pipe:
                pipe.get(keys[0])
                pipe.get(keys[1])
                value, mark = await pipe.execute()
        if value is not None:
            deadline, _, payload = _text(value).split("|", 2)
            return EventLookup("pending" if now <= float(deadline) else "expired", payload)
        if mark is not None:
            return EventLookup("duplicate" if mark == b"used" else "expired")
        return EventLookup("unknown")

    @_unavailable
    async def append_feedback(
        self, name: str, event_id: str, feedback: str, *, now: float
    ) -> EventLookup:
        keys = [
            self._key(kind, name, event_id) if kind in ("ev", "done") else self._key(kind, name)
            for kind in ("ev", "done", "due", "log", "ctr")
        ]
        reply = await self._claim(keys, [event_id, repr(now), feedback])
        status = _text(reply[0])
        if status == "gone":
            raise ModelGone(f"the store does not hold model {name!r}")
        if status != "claimed":
            return EventLookup(status)  # type: ignore[arg-type]
        return EventLookup("claimed", _text(reply[1]), int(reply[2]))

    @_unavailable
    async def expire_events(self, name: str, *, now: float, limit: int, log: bool) -> int:
        keys = [self._key("due", name), self._key("log", name), self._key("ctr", name)]
        args = [
            repr(now), limit, "1" if log else "0",
            self._key("ev", name) + ":", self._key("done", name) + ":",
        ]  # fmt: skip
        expired = int(await self._run("EXPIRE", keys, args))
        if expired < 0:
            raise ModelGone(f"the store does not hold model {name!r}")
        return expired

    @_unavailable
    async def pending_count(self, name: str) -> int:
        return int(await self.client.zcard(self._key("due", name)))

    # -- the log ---------------------------------------------------------------------
    @_unavailable
    async def read_log(self, name: str, *, after: int, limit: int) -> list[LogEntry]:
        found: Any = await self.client.xrange(self._key("log", name), f"{after + 1}-0", "+", limit)
        entries = []
        for entry_id, fields in found or ():
            feedback = fields.get(b"f")
            entries.append(
                LogEntry(
                    int(_text(entry_id).split("-")[0]),
                    _text(fields[b"e"]),
                    _text(fields[b"d"]),
                    None if feedback is None else _text(feedback),
                    float(fields[b"t"]),
                )
            )
        return entries

    @_unavailable
    async def log_bounds(self, name: str) -> LogBounds:
        key = self._key("log", name)
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.xlen(key)
            pipe.xrange(key, "-", "+", 1)
            pipe.hmget(self._key("ctr", name), ["log_last", "decisions"])
            length, first, (last, decisions) = await pipe.execute()
        first_offset = int(_text(first[0][0]).split("-")[0]) if first else 0
        return LogBounds(first_offset, int(last or 0), int(length), int(decisions or 0))

    # -- lease -----------------------------------------------------------------------
    @_unavailable
    async def acquire_lease(
        self, name: str, holder: str, *, ttl_seconds: float, now: float
    ) -> int | None:
        keys = [self._key("lease", name), self._key("ctr", name)]
        reply = await self._run("ACQUIRE", keys, [holder, max(1, int(ttl_seconds * 1000))])
        token = int(reply[0])
        if token == -2:
            raise ModelGone(f"the store does not hold model {name!r}")
        if token < 0:
            return None
        self._lease_marks[name] = (token, _text(reply[1]))
        return token

    @_unavailable
    async def renew_lease(
        self, name: str, holder: str, token: int, *, ttl_seconds: float, now: float
    ) -> bool:
        args = [f"{holder}|{token}", max(1, int(ttl_seconds * 1000))]
        return bool(await self._run("RENEW", [self._key("lease", name)], args))

    @_unavailable
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
        return {
            learner.name: codes[int(reply)] for learner, reply in zip(idle, replies, strict=True)
        }

    async def _idle_pipelined(
        self, script: Any, holder: str, idle: Sequence[IdleLearner], ttl_ms: int
    ) -> list[Any]:
        async with self.client.pipeline(transaction=False) as pipe:
            # loaded by the pipeline if Redis lacks it (as AsyncScript.__call__ does)
            pipe.scripts.add(script)  # type: ignore[arg-type]
            for learner in idle:
                keys = [self._key(kind, learner.name) for kind in ("lease", "ctr", "req")]
                args: list[str | int] = [f"{holder}|{learner.token}", ttl_ms, learner.offset]
                pipe.evalsha(script.sha, len(keys), *keys, *args)
            return list(await pipe.execute())

    @_unavailable
    async def release_lease(self, name: str, holder: str, token: int) -> None:
        await self._run("RENEW", [self._key("lease", name)], [f"{holder}|{token}", 0])

    @_unavailable
    async def lease(self, name: str, *, now: float) -> Lease | None:
        async with self.client.pipeline(transaction=False) as pipe:
            pipe.get(self._key("lease", name))
            pipe.pttl(self._key("lease", name))
            value, ttl_ms = await pipe.execute()
        if value is None:
            return None
        holder, token = _text(value).rsplit("|", 1)
        return Lease(holder, int(token), now + max(0, int(ttl_ms)) / 1000)

    # -- checkpoints -----------------------------------------------------------------
    @_unavailable
    async def save_checkpoint(
        self,
        name: str,
        *,
        version: int,
        blob: bytes,
        keep: int,
        now: float,
        offset: int,
        acked_at: float,
        token: int,
    ) -> CheckpointInfo:
        keys = [self._key(kind, name) for kind in ("ctr", "ckpt", "ckpts", "log", "lease")]
        issued = self._lease_marks.get(name)
        args: list[Any] = [
            token, version, repr(now), len(blob), offset, repr(acked_at), keep, blob,
            self.prefix + "snapshots", name, issued[1] if issued and issued[0] == token else "",
        ]  # fmt: skip
        reply = await self._run("SAVE_CHECKPOINT", keys, args)
        if _text(reply[0]) == "gone":
            raise ModelGone(f"the store does not hold model {name!r}")
        if _text(reply[0]) == "fenced":
            raise FencedOut(f"fencing token {token} is older than {int(reply[1])}")
        return CheckpointInfo(
            int(reply[1]), version, now, len(blob), offset, acked_at, int(reply[2])
        )

    @_unavailable
    async def list_checkpoints(self, name: str, limit: int = 0) -> list[CheckpointInfo]:
        key = self._key("ckpts", name)
        members: list[Any] = await self.client.zrevrange(key, 0, limit - 1 if limit > 0 else -1)
        return [_info(member) for member in members]

    @_unavailable
    async def load_checkpoint(self, name: str, sequence: int) -> bytes | None:
        value = await self.client.hget(self._key("ckpt", name), str(sequence))
        return value if isinstance(value, bytes) else None

    # -- notifications ---------------------------------------------------------------
    @_unavailable
    async def request_checkpoint(self, name: str) -> None:
        await self.client.set(self._key("req", name), b"1")

    @_unavailable
    async def take_checkpoint_request(self, name: str) -> bool:
        return bool(await self.client.delete(self._key("req", name)))

    async def snapshot_notices(self, timeout_seconds: float) -> set[str]:
        try:
            if self._pubsub is None:
                self._pubsub = self.client.pubsub(ignore_subscribe_messages=True)
                await self._pubsub.subscribe(self.prefix + "snapshots")
            names: set[str] = set()
            message = await self._pubsub.get_message(timeout=timeout_seconds)
            while message is not None:
                if message.get("type") == "message":
                    names.add(_text(message["data"]))
                message = await self._pubsub.get_message(timeout=0.0)
            return names
        except (RedisError, OSError) as err:
            pubsub, self._pubsub = self._pubsub, None
            if pubsub is not None:
                await asyncio.shield(pubsub.aclose())
            raise store_error(err) from err
