"""One kept-open Redis connection for the decision writes, without redis-py's per-call work.

A predict waits for its decision's ``PUT`` round trip, so the cost of one call is on
every answer.  Through redis-py's asyncio client a call checks a connection out of the
pool (a lock and a timeout), wraps the socket write in ``wait_for`` (a task) and the read
in another timeout: about as much CPU as the round trip itself.  :class:`WireConnection`
speaks RESP directly: the command is packed by hiredis and written to the transport, and
the replies are parsed by a hiredis reader as they arrive and handed to the callers in
order (calls may overlap: they are pipelined on the one connection).

Failures keep the store's rules: every call gives up after the Redis timeout, a timeout
or a lost connection fails every call in flight with redis-py's ``TimeoutError`` /
``ConnectionError`` (the store turns them into ``StoreUnavailable``) and drops the
connection; the next call opens a new one.  Nothing is retried.
"""

from __future__ import annotations

import asyncio
from collections import deque
from typing import Any

import hiredis
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import ResponseError
from redis.exceptions import TimeoutError as RedisTimeoutError


class _Resp(asyncio.Protocol):
    """The transport's side: replies in order to the futures waiting for them."""

    def __init__(self) -> None:
        self.reader = hiredis.Reader()
        self.waiting: deque[asyncio.Future[Any]] = deque()
        self.transport: asyncio.Transport | None = None
        self.closed = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        try:
            while (reply := self.reader.gets()) is not False:
                if not self.waiting:
                    raise hiredis.ProtocolError("a reply nobody asked for")
                waiter = self.waiting.popleft()
                if not waiter.done():  # a caller that gave up leaves its reply unread
                    waiter.set_result(reply)
        except hiredis.ProtocolError as err:
            self.fail(RedisConnectionError(f"redis protocol error: {err}"))

    def connection_lost(self, exc: Exception | None) -> None:
        self.fail(
            RedisConnectionError(f"connection to redis lost: {exc or 'closed by the server'}")
        )

    def fail(self, error: Exception) -> None:
        """Drop the connection: every call in flight gets ``error`` (their replies are lost)."""
        self.closed = True
        if self.transport is not None:
            self.transport.abort()
        while self.waiting:
            waiter = self.waiting.popleft()
            if not waiter.done():
                waiter.set_exception(error)


def _retrieve(opening: asyncio.Future[_Resp]) -> None:
    """A failed attempt whose callers all gave up is not reported as never retrieved."""
    if not opening.cancelled():
        opening.exception()


class WireConnection:
    """Calls on one connection to ``host:port``, opened on first use and after a failure."""

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

    async def call(self, *args: Any) -> Any:
        """Send one command and wait for its reply (an error reply raises ``ResponseError``)."""
        resp = self._resp
        if resp is None or resp.closed:
            resp = await self._open()
        reply = await self._roundtrip(resp, hiredis.pack_command(args))
        if isinstance(reply, hiredis.ReplyError):
            raise ResponseError(str(reply))
        return reply

    async def _roundtrip(self, resp: _Resp, packed: bytes) -> Any:
        loop = asyncio.get_running_loop()
        waiter: asyncio.Future[Any] = loop.create_future()
        resp.waiting.append(waiter)
        assert resp.transport is not None
        resp.transport.write(packed)
        timer = loop.call_later(self.timeout_seconds, self._timed_out, resp, waiter)
        try:
            return await waiter
        finally:
            timer.cancel()

    def _timed_out(self, resp: _Resp, waiter: asyncio.Future[Any]) -> None:
        if not waiter.done():  # the replies behind it can no longer be matched: drop them all
            resp.fail(RedisTimeoutError(f"redis did not answer in {self.timeout_seconds} s"))

    async def _open(self) -> _Resp:
        if self._opening is None:  # concurrent callers share one connection attempt
            self._opening = asyncio.ensure_future(self._connect())
            self._opening.add_done_callback(_retrieve)
        opening = self._opening
        try:
            return await asyncio.shield(opening)
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
        except BaseException:
            resp.fail(RedisConnectionError("redis connection setup failed"))
            raise
        self._resp = resp
        return resp

    async def _checked(self, resp: _Resp, args: tuple[Any, ...]) -> None:
        reply = await self._roundtrip(resp, hiredis.pack_command(args))
        if isinstance(reply, hiredis.ReplyError):
            raise RedisConnectionError(f"redis refused {args[0]}: {reply}")

    def close(self) -> None:
        resp, self._resp = self._resp, None
        if resp is not None:
            resp.fail(RedisConnectionError("the store is closing"))
