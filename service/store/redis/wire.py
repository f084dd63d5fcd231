"""One kept-open Redis connection for the decision writes, without redis-py's per-call work.

A predict waits for its decision's ``PUT`` round trip, so the cost of one call is on
every answer.  Through redis-py's asyncio client a call checks a connection out of the
pool (a lock and a timeout), wraps the socket write in ``wait_for`` (a task) and the read
in another timeout: about as much CPU as the round trip itself.  :class:`WireConnection`
speaks RESP directly: commands are packed by hiredis and written to the transport together,
and the replies are parsed by a hiredis reader as they arrive and handed, in order, to
the callback of the write they answer (writes may overlap: they are pipelined on the one
connection).  :meth:`WireConnection.submit` is a plain function, so a batch of writes
costs no task and no coroutine; :meth:`WireConnection.execute` awaits the replies of a
few commands (a feedback's look-up and claim).

Failures keep the store's rules: every write gives up after the Redis timeout, a timeout
or a lost connection fails every write in flight with redis-py's ``TimeoutError`` /
``ConnectionError`` and drops the connection; the next write opens a new one
(:meth:`WireConnection.connect`).  Nothing is retried.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import Callable
from typing import Any, cast

import hiredis
from redis.exceptions import (
    BusyLoadingError,
    ExecAbortError,
    NoPermissionError,
    OutOfMemoryError,
    ReadOnlyError,
    RedisClusterException,
    RedisError,
    ResponseError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from service.store.base import StoreUnavailable

#: what a Redis call raises when the store cannot answer it: redis-py's errors, the
#: cluster client's own (``RedisClusterException``, e.g. "Redis Cluster cannot be
#: connected" while a master is down, is not a ``RedisError``) and socket errors
REDIS_FAILURES: tuple[type[Exception], ...] = (RedisError, RedisClusterException, OSError)

#: called once with the replies of a write (error replies as ``hiredis.ReplyError``
#: values), or with the error that lost them
OnReplies = Callable[[list[Any] | None, BaseException | None], None]


#: why Redis refuses calls, by the code of its error reply (redis-py strips the code of
#: those it has a class for: see :func:`refusal`)
REFUSALS = {
    "LOADING": "is loading its data set",
    "READONLY": "is a read-only replica (after a failover?)",
    "OOM": "is out of memory (maxmemory under noeviction)",
    "MISCONF": "refuses writes after a failed snapshot",
    "BUSY": "runs a long script",
    "MASTERDOWN": "lost its master",
    "NOREPLICAS": "has too few replicas",
    "TRYAGAIN": "is migrating the keys",
    "CLUSTERDOWN": "cluster is down",
    "EXECABORT": "discarded a transaction",
    "NOAUTH": "needs authentication",
    "NOPERM": "denies this user",
    "WRONGPASS": "refused the password",
}
_CLASSES = (
    (BusyLoadingError, "LOADING"), (ReadOnlyError, "READONLY"), (OutOfMemoryError, "OOM"),
    (ExecAbortError, "EXECABORT"), (NoPermissionError, "NOPERM"),
)  # fmt: skip


def refusal(err: BaseException) -> str | None:
    """The code of a Redis error reply (``LOADING``, ``OOM``...), None for other errors."""
    for cls, code in _CLASSES:
        if isinstance(err, cls):
            return code
    if isinstance(err, ResponseError):
        first = str(err).split(" ", 1)[0]
        return first if first.isupper() else "ERR"
    return None


def store_error(err: BaseException) -> StoreUnavailable:
    """The store's error for any Redis failure: a socket error, a timeout or an error reply.

    One mapping for every call: whatever Redis answers instead of a result (LOADING,
    READONLY, OOM, any other error reply) makes the call unavailable now, so a request
    gets 503 with ``Retry-After`` and a learner retries; none of them is the request's
    fault (its fields are checked before any call).
    """
    code = refusal(err)
    if code is None:
        return StoreUnavailable(f"redis: {err or type(err).__name__}")
    why = REFUSALS.get(code, "refused the call")
    return StoreUnavailable(f"redis {why} ({code}): {err}")


class _Write:
    """The commands of one write: their replies so far, and who gets them."""

    __slots__ = ("count", "on_replies", "replies", "timer")

    def __init__(self, count: int, on_replies: OnReplies) -> None:
        self.count = count
        self.replies: list[Any] = []
        self.on_replies = on_replies
        self.timer: asyncio.TimerHandle | None = None

    def finish(self, replies: list[Any] | None, error: BaseException | None) -> None:
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.on_replies(replies, error)


class _Resp(asyncio.Protocol):
    """The transport's side: replies in order to the writes waiting for them."""

    def __init__(self) -> None:
        self.reader = hiredis.Reader()
        self.waiting: deque[_Write] = deque()
        self.transport: asyncio.Transport | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = cast(asyncio.Transport, transport)  # a stream's

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        try:
            while (reply := self.reader.gets()) is not False:
                if not self.waiting:
                    raise hiredis.ProtocolError("a reply nobody asked for")
                write = self.waiting[0]
                write.replies.append(reply)
                if len(write.replies) == write.count:
                    self.waiting.popleft()
                    write.finish(write.replies, None)
        except hiredis.ProtocolError as err:
            self.fail(RedisConnectionError(f"redis protocol error: {err}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.fail(
            RedisConnectionError(f"connection to redis lost: {exc or 'closed by the server'}")
        )

    def fail(self, error: Exception) -> None:
        """Drop the connection: every write in flight gets ``error`` (its replies are lost)."""
        self.closed = True
        if self.transport is not None:
            self.transport.abort()
        while self.waiting:
            self.waiting.popleft().finish(None, error)


def _retrieve(opening: asyncio.Future[_Resp]) -> None:
    """A failed attempt whose callers all gave up is not reported as never retrieved."""
    if not opening.cancelled():
        opening.exception()


class WireConnection:
    """Writes on one connection to ``host:port``, opened by :meth:`connect`."""

    def __init__(
        self,
        host: str,
        port: int,
        *,
        timeout_seconds: float,
        db: int = 0,
        username: str | None = None,
        password: str | None = None,
    ) -> None:
        self.host, self.port, self.db = host, port, db
        self.username, self.password = username, password
        self.timeout_seconds = timeout_seconds
        self._resp: _Resp | None = None
        self._opening: asyncio.Future[_Resp] | None = None
        self._closed = False

    @property
    def connected(self) -> bool:
        """Whether :meth:`submit` can write now (else :meth:`connect` first)."""
        return self._resp is not None and not self._resp.closed

    def submit(self, packed: bytes, count: int, on_replies: OnReplies) -> None:
        """Write ``count`` packed commands; ``on_replies`` gets their replies or the error.

        Needs an open connection (:attr:`connected`, else ``ConnectionError``).  The
        replies must come within the Redis timeout, else the connection is dropped and
        every write in flight fails.
        """
        resp = self._resp
        if resp is None or resp.closed:  # lost since connect() returned
            raise RedisConnectionError("the connection to redis is not open")
        self._write(resp, packed, count, on_replies)

    def _write(self, resp: _Resp, packed: bytes, count: int, on_replies: OnReplies) -> None:
        assert resp.transport is not None
        write = _Write(count, on_replies)
        resp.waiting.append(write)
        resp.transport.write(packed)
        loop = asyncio.get_running_loop()
        write.timer = loop.call_later(self.timeout_seconds, self._timed_out, resp, write)

    async def call(self, *args: Any) -> Any:
        """Send one command and wait for its reply (an error reply raises ``ResponseError``)."""
        (reply,) = await self.execute(args)
        return reply

    async def execute(self, *commands: tuple[Any, ...]) -> list[Any]:
        """Write ``commands`` together and wait for their replies (an error reply raises
        ``ResponseError``)."""
        await self.connect()
        assert self._resp is not None
        packed = b"".join(hiredis.pack_command(command) for command in commands)
        replies = await self._roundtrip(self._resp, packed, len(commands))
        for reply in replies:
            if isinstance(reply, hiredis.ReplyError):
                raise ResponseError(str(reply))
        return replies

    async def _roundtrip(self, resp: _Resp, packed: bytes, count: int = 1) -> list[Any]:
        waiter: asyncio.Future[list[Any]] = asyncio.get_running_loop().create_future()

        def answered(replies: list[Any] | None, error: BaseException | None) -> None:
            if waiter.done():  # the caller gave up: its replies are left unread
                return
            if replies is None:
                waiter.set_exception(error or RedisConnectionError("no reply"))
            else:
                waiter.set_result(replies)

        self._write(resp, packed, count, answered)
        return await waiter

    def _timed_out(self, resp: _Resp, write: _Write) -> None:
        if write.timer is not None:  # the replies behind it can no longer be matched: drop all
            resp.fail(RedisTimeoutError(f"redis did not answer in {self.timeout_seconds} s"))

    async def connect(self) -> None:
        """Open the connection unless it is open (concurrent callers share one attempt)."""
        if self.connected:
            return
        if self._closed:
            raise RedisConnectionError("the store is closing")
        if self._opening is None:
            self._opening = asyncio.ensure_future(self._connect())
            self._opening.add_done_callback(_retrieve)
        opening = self._opening
        try:
            await asyncio.shield(opening)
        finally:
            if opening.done():
                self._opening = None

    async def _connect(self) -> _Resp:
        loop = asyncio.get_running_loop()
        try:
            async with asyncio.timeout(self.timeout_seconds):
                _, resp = await loop.create_connection(_Resp, self.host, self.port)
        except (OSError, TimeoutError) as err:
            raise RedisConnectionError(
                f"cannot connect to redis at {self.host}:{self.port}: {err or type(err).__name__}"
            ) from err
        try:
            if self.password is not None:
                auth = (self.username, self.password) if self.username else (self.password,)
                await self._checked(resp, ("AUTH", *auth))
            if self.db:
                await self._checked(resp, ("SELECT", self.db))
            if self._closed:  # closed while this connection was being made: never kept
                raise RedisConnectionError("the store is closing")
        except BaseException:
            resp.fail(RedisConnectionError("redis connection setup failed"))
            raise
        self._resp = resp  # only now: nothing is written before the set-up commands
        return resp

    async def _checked(self, resp: _Resp, args: tuple[Any, ...]) -> None:
        (reply,) = await self._roundtrip(resp, hiredis.pack_command(args))
        if isinstance(reply, hiredis.ReplyError):
            raise RedisConnectionError(f"redis refused {args[0]}: {reply}")

    def close(self) -> None:
        """Fail every write in flight and close the connection, and one being opened."""
        self._closed = True
        resp, self._resp = self._resp, None
        if resp is not None:
            resp.fail(RedisConnectionError("the store is closing"))
