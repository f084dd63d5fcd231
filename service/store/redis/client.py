"""The Redis store's client: the connection pool, the wire connection, keys and scripts.

Socket timeouts are short and nothing is retried: when Redis is away a call fails fast
with :class:`~service.store.base.StoreUnavailable` and the caller decides (a predict is
still answered, a feedback gets 503).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Callable, Coroutine
from typing import Any, ParamSpec, Self, TypeVar

from redis.asyncio import BlockingConnectionPool, Redis
from redis.asyncio.client import PubSub
from redis.asyncio.connection import Connection
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError, ResponseError

from service.store.base import ModelGone
from service.store.budget import within_budget
from service.store.protocols import StoreLifecycle
from service.store.redis import scripts as lua
from service.store.redis.decision_writes import DecisionWrites
from service.store.redis.wire import WireConnection, store_error

P = ParamSpec("P")
T = TypeVar("T")

#: the Lua scripts the store runs (:mod:`service.store.redis.scripts`)
SCRIPTS = ("FEEDBACK", "EXPIRE", "ACQUIRE", "RENEW", "IDLE", "SAVE_CHECKPOINT", "HOLD")


def unavailable(
    method: Callable[P, Coroutine[Any, Any, T]],
) -> Callable[P, Coroutine[Any, Any, T]]:
    """Turn connection errors, timeouts and error replies (LOADING, READONLY, OOM...) into
    :class:`StoreUnavailable` (:func:`~.wire.store_error`); spend the budget."""

    @functools.wraps(method)
    async def wrapped(*args: P.args, **kwargs: P.kwargs) -> T:
        try:
            return await within_budget(method(*args, **kwargs))
        except (RedisError, OSError) as err:
            raise store_error(err) from err

    return wrapped


def text(value: Any) -> str:
    """A Redis reply (bytes) as text."""
    return value.decode() if isinstance(value, bytes) else str(value)


def gone(name: str) -> ModelGone:
    """The error of a step on a model the store does not hold."""
    return ModelGone(f"the store does not hold model {name!r}")


def _wire_connection(client: Redis) -> WireConnection | None:
    """A connection of its own for the calls of requests (decision writes, a feedback's
    look-up and claim), for a plain TCP Redis with timeouts."""
    pool = client.connection_pool
    kwargs = pool.connection_kwargs
    if pool.connection_class is not Connection or not kwargs.get("socket_timeout"):
        return None  # TLS, a unix socket or no timeout: the pooled client does them
    return WireConnection(
        kwargs.get("host", "localhost"), int(kwargs.get("port", 6379)),
        timeout_seconds=float(kwargs["socket_timeout"]), db=int(kwargs.get("db") or 0),
        username=kwargs.get("username"), password=kwargs.get("password"),
    )  # fmt: skip


class RedisBase(StoreLifecycle):
    """One Redis client and its scripts, shared by every concern of the Redis store."""

    def __init__(self, client: Redis, *, prefix: str = "banditree:") -> None:
        self.client = client
        self.prefix = prefix
        self._scripts = {name: client.register_script(getattr(lua, name)) for name in SCRIPTS}
        # model -> (token, mark it was issued under): a token from before a loss is fenced
        self._lease_marks: dict[str, tuple[int, str]] = {}
        self._pubsub: PubSub | None = None
        # one kept-open connection for the calls of every request (None: the pool does them)
        self._wire = _wire_connection(client)
        self._decisions = DecisionWrites(client, self._key, self._wire)

    @classmethod
    def from_url(
        cls, url: str, *, prefix: str = "banditree:", timeout_seconds: float = 0.25
    ) -> Self:
        """A store on ``url``; every socket operation gives up after ``timeout_seconds``."""
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
        return cls(Redis(connection_pool=pool), prefix=prefix)

    def _key(self, kind: str, name: str, *rest: str) -> str:
        """``<prefix><kind>:{<name>}[:<rest>...]``: a model's keys share its hash tag."""
        return f"{self.prefix}{kind}:{{{name}}}" + "".join(f":{part}" for part in rest)

    async def _run(self, script: str, keys: list[str], args: list[Any]) -> Any:
        return await self._scripts[script](keys=keys, args=args)

    async def _run_on_wire(self, script: str, keys: list[str], args: list[Any]) -> Any:
        """:meth:`_run` on the wire connection (the calls of requests), if there is one."""
        if self._wire is None:
            return await self._run(script, keys, args)
        code = self._scripts[script]
        try:
            return await self._wire.call("EVALSHA", code.sha, len(keys), *keys, *args)
        except ResponseError as err:
            if not str(err).startswith("NOSCRIPT"):
                raise
            # Redis restarted (or flushed its scripts): send the script itself
            return await self._wire.call("EVAL", code.script, len(keys), *keys, *args)

    @unavailable
    async def ping(self) -> None:
        """Redis answers and takes writes: a short-lived key is set, so a read-only replica,
        a Redis out of memory or loading its data fails it as every write would."""
        await self.client.set(self.prefix + "ready", b"1", px=10_000)

    async def close(self) -> None:
        await self._decisions.close()  # writes still travelling (their waiters get 503)
        if self._pubsub is not None:
            await self._pubsub.aclose()
        await self.client.aclose()
        await self.client.connection_pool.disconnect()  # the client does not own its pool

    @unavailable
    async def epoch(self) -> str:
        key = self.prefix + "epoch"
        value = await self.client.get(key)
        if value is None:  # first use, or the data was lost: the first process to ask writes it
            await self.client.set(key, uuid.uuid4().hex.encode(), nx=True)
            value = await self.client.get(key)
        return text(value)
