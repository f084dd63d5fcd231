"""The Redis store's client: the connection pool, the wire connection, keys and scripts.

Socket timeouts are short and nothing is retried: when Redis is away a call fails fast
with :class:`~service.store.base.StoreUnavailable` and the caller decides (a predict is
still answered, a feedback gets 503).  The URL may name a single Redis or any node of a
Redis Cluster (:mod:`.cluster`, detected at start).  A feedback's claim may wait for
replicas (``WAIT``) on the connection that made it (:meth:`RedisBase._claim`).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, Self, TypeVar

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.client import PubSub
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.connection import Connection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, ResponseError

from service.store.base import ModelGone, StoreUnavailable, within_budget
from service.store.protocols import StoreLifecycle
from service.store.redis import cluster
from service.store.redis import scripts as lua
from service.store.redis.decision_writes import DecisionWrites
from service.store.redis.wire import REDIS_FAILURES, WireConnection, store_error

P = ParamSpec("P")
T = TypeVar("T")

#: the Lua scripts the store runs (:mod:`service.store.redis.scripts`)
SCRIPTS = (
    "FEEDBACK", "EXPIRE", "ACQUIRE", "RENEW", "IDLE", "SAVE_CHECKPOINT", "HOLD", "SAVE_CAPPED",
    "END_CREATE", "PUT_NEW",
)  # fmt: skip


def unavailable(
    method: Callable[P, Coroutine[Any, Any, T]],
) -> Callable[P, Coroutine[Any, Any, T]]:
    """Turn connection errors, timeouts and error replies (LOADING, READONLY, OOM...) into
    :class:`StoreUnavailable` (:func:`~.wire.store_error`); spend the budget."""

    @functools.wraps(method)
    async def wrapped(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await within_budget(method(*args, **kwargs))
        except REDIS_FAILURES as err:  # cluster redirections and faults included
            raise store_error(err) from err

    return wrapped


def text(value: Any) -> str:
    """A Redis reply (bytes) as text."""
    return value.decode() if isinstance(value, bytes) else str(value)


def gone(name: str) -> ModelGone:
    """The error of a step on a model the store does not hold."""
    return ModelGone(f"the store does not hold model {name!r}")


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


class RedisBase(StoreLifecycle):
    """One Redis client and its scripts, shared by every concern of the Redis store."""

    def __init__(
        self,
        client: Redis | RedisCluster,
        *,
        prefix: str = "banditree:",
        wait_replicas: int | None = None,
        wait_timeout_ms: int = 100,
        checkpoint_keep_bytes: int | None = None,
        wire: bool = True,
    ) -> None:
        self.client: Any = client  # Redis or RedisCluster: the calls used are common to both
        self.prefix = prefix
        #: bytes the checkpoints of one model may take together (None: no bound)
        self.keep_bytes = checkpoint_keep_bytes
        self.cluster = isinstance(client, RedisCluster)
        self._models_key = cluster.global_key(prefix, "models", cluster=self.cluster)
        self._epoch_key = cluster.global_key(prefix, "epoch", cluster=self.cluster)
        self._learners_key = cluster.global_key(prefix, "learners", cluster=self.cluster)
        self._changes_key = cluster.global_key(prefix, "changes", cluster=self.cluster)
        # replicas a feedback waits for (None: decided at the first ping, by what exists)
        self.wait_replicas = wait_replicas
        self.wait_timeout_ms = wait_timeout_ms
        self._started = False
        self._scripts = {name: client.register_script(getattr(lua, name)) for name in SCRIPTS}
        # model -> (token, mark it was issued under): a token from before a loss is fenced
        self._lease_marks: dict[str, tuple[int, str]] = {}
        self._pubsub: PubSub | None = None
        # one kept-open connection for the calls of every request (None: the pool does them;
        # ``wire=False`` asks for redis-py's pooled client on purpose, docs/decisions/0002)
        self._wire = _wire_connection(client) if wire else None
        # and one for the learners' log reads (large replies, kept off the requests' one)
        self._log_wire = _wire_connection(client) if wire else None
        self._decisions = DecisionWrites(client, self._key, self._wire)
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
        checkpoint_keep_bytes: int | None = None,
        wire: bool = True,
    ) -> Self:
        """A store on ``url`` (a single Redis or any node of a cluster); every socket
        operation gives up after ``timeout_seconds``.  A feedback waits for
        ``wait_replicas`` replicas (None: one if the Redis has any) ``wait_timeout_ms``.
        ``wire=False``: every call through redis-py's pooled client (no kept-open wire
        connection)."""
        waits: dict[str, Any] = {
            "wait_replicas": wait_replicas,
            "wait_timeout_ms": wait_timeout_ms,
            "checkpoint_keep_bytes": checkpoint_keep_bytes,
            "wire": wire,
        }
        if cluster.is_cluster(url, timeout_seconds):
            return cls(cluster.cluster_client(url, timeout_seconds), prefix=prefix, **waits)
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
        return cls(Redis(connection_pool=pool), prefix=prefix, **waits)

    def _key(self, kind: str, name: str, *rest: str) -> str:
        """``<prefix><kind>:{<name>}[:<rest>...]``: a model's keys share its hash tag."""
        return f"{self.prefix}{kind}:{{{name}}}" + "".join(f":{part}" for part in rest)

    async def _run(self, script: str, keys: list[str], args: list[Any]) -> Any:
        code = self._scripts[script]
        if not self.cluster:
            return await code(keys=keys, args=args)
        # in a cluster, a master that lacks it is sent the script itself (redis-py would
        # load it on every master, and fail while one is down)
        try:
            return await self.client.evalsha(code.sha, len(keys), *keys, *args)
        except NoScriptError:
            return await self.client.eval(code.script, len(keys), *keys, *args)

    async def _claim(self, keys: list[str], args: list[Any]) -> Any:
        """The FEEDBACK script; when feedback waits for replicas, then ``WAIT`` on the same
        connection: a claim no replica acknowledged in time is StoreUnavailable (503).

        The claim stays on the master then: a retry finds it (409) unless the master
        died before any replica had it, then the retry claims the decision again.
        """
        code, waits = self._scripts["FEEDBACK"], self.wait_replicas or 0
        commands: list[tuple[Any, ...]] = [("EVALSHA", code.sha, len(keys), *keys, *args)]
        if waits:
            commands.append(("WAIT", waits, self.wait_timeout_ms))
        try:
            replies = await self._one_connection(keys[0], commands)
        except ResponseError as err:
            if not str(err).startswith("NOSCRIPT") and not isinstance(err, NoScriptError):
                raise
            # Redis restarted (or flushed its scripts): send the script itself
            commands[0] = ("EVAL", code.script, len(keys), *keys, *args)
            replies = await self._one_connection(keys[0], commands)
        if waits and text(replies[0][0]) == "claimed" and int(replies[1]) < waits:
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

    @unavailable
    async def ping(self) -> None:
        """Redis answers and takes writes: a short-lived key is set, so a read-only replica,
        a Redis out of memory or loading its data fails it as every write would."""
        await self.client.set(self.prefix + "ready", b"1", px=10_000)
        if not self._started:  # once: what the Redis is decides what a feedback waits for
            if self.cluster:
                await cluster.migrate_global_keys(self.client, self.prefix)
            if self.wait_replicas is None:
                self.wait_replicas = min(1, await self._replicas())
            self._started = True

    @unavailable
    async def durability_warnings(self) -> list[str]:
        """What a crash of each master would lose that was acknowledged: everything
        without persistence, the writes since the last snapshot with RDB only, up to
        about 2 s with ``appendfsync everysec`` (a write is postponed while the previous
        fsync runs, and the reply goes out meanwhile), none with ``appendfsync always``.
        ``CONFIG`` may be refused (a managed Redis): then only ``INFO`` is read."""
        infos = await self._each_master("INFO", "persistence")
        try:
            configs = await self._each_master("CONFIG", "GET", "*")
        except ResponseError:
            configs = {}
        warnings = []
        for node, info in infos.items():
            config = _pairs(configs.get(node, {}))
            save, fsync = config.get("save"), config.get("appendfsync")
            if not int(info.get("aof_enabled", 0)):
                kept, lost = (
                    ("no persistence", "everything it holds")
                    if save == ""
                    else ("only RDB snapshots", "what was written since its last snapshot")
                )
                warnings.append(
                    f"redis {node} keeps {kept} (appendonly no): a crash or restart loses "
                    f"{lost}, acknowledged feedback included; set appendonly yes, "
                    "appendfsync always"
                )
            elif fsync in ("everysec", "no"):
                warnings.append(
                    f"redis {node} has appendfsync {fsync}: a crash of the redis process "
                    "can lose the last seconds of acknowledged feedback (a write waits "
                    "while the previous fsync runs, its reply does not); appendfsync "
                    "always loses none"
                )
        return warnings

    async def _each_master(self, *command: str) -> dict[str, Any]:
        """``command``'s reply from each master, by ``host:port``."""
        if not self.cluster:
            kwargs = self.client.connection_pool.connection_kwargs
            node = f"{kwargs.get('host', '')}:{kwargs.get('port', '')}"
            return {node: await self.client.execute_command(*command)}
        replies = {}
        for primary in self.client.get_primaries():
            reply = await self.client.execute_command(*command, target_nodes=primary)
            replies[f"{primary.host}:{primary.port}"] = reply
        return replies

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
        if self._log_wire is not None:
            self._log_wire.close()
        if isinstance(self.client, cluster.OwnedCluster):
            await self.client.close_all()
        else:
            await self.client.aclose()
        if not self.cluster:
            await self.client.connection_pool.disconnect()  # the client does not own its pool

    @unavailable
    async def epoch(self) -> str:
        key = self._epoch_key
        value = await self.client.get(key)
        if value is None:  # first use, or the data was lost: the first process to ask writes it
            await self.client.set(key, uuid.uuid4().hex.encode(), nx=True)
            value = await self.client.get(key)
        return text(value)


def _pairs(reply: Any) -> dict[str, str]:
    """A ``CONFIG GET`` reply (a flat list, or redis-py's dict) as text pairs."""
    if isinstance(reply, dict):
        return {text(k): text(v) for k, v in reply.items()}
    items = [text(v) for v in reply]
    return dict(zip(items[::2], items[1::2], strict=True))
