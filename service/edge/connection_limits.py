"""uvicorn's HTTP protocol with read deadlines and connection caps, for ``banditree serve``.

uvicorn closes idle keep-alive connections but holds a connection that sends nothing,
headers that never complete or a body that trickles in, for ever; and its
``limit_concurrency`` counts open connections, so a thousand idle sockets turn every
request into a 503.  :class:`GuardedHttp` instead:

* closes a connection whose request headers are not complete ``header_timeout_seconds``
  after it opened (or after its last answer), or that sends more than
  :data:`MAX_HEADER_BYTES` of headers; answers 431 to a request with more than
  :data:`MAX_HEADERS` header lines;
* bounds a request body by ``body_timeout_seconds`` from the end of its headers: past
  it the request is answered 408 (when no answer started) and the connection closed.  A
  body left unread after an early answer (a 413, a 401) is read and dropped under the
  same deadline, so the client reads its answer instead of a connection reset;
* caps open connections at ``max_connections`` and at ``max_connections_per_peer`` per
  client address.  A connection over a cap displaces the longest-waiting connection
  that is idle, still sending headers or still sending a body (of that peer, for the
  per-peer cap), if it has waited :data:`DISPLACE_AFTER_SECONDS` (a request carrying a
  configured API key: :data:`KEYED_DISPLACE_AFTER_SECONDS`, checked when its headers
  are complete); otherwise the new connection's request is read and answered 503
  (``Retry-After: 1``), so a burst over
  the cap is served up to it and refused beyond.  Connections in a request that is being
  answered are never displaced, so clients that send whole requests keep being served
  while slow sockets churn;
* answers 503 to a request when ``max_connections`` requests are already running.

The counters are per process (each worker holds its own connections).
"""

from __future__ import annotations

import asyncio
import functools
import json
from collections import OrderedDict
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from service.settings import Settings, load_settings

#: a request's header block larger than this closes the connection
MAX_HEADER_BYTES = 65_536
#: a request with more header lines than this is answered 431 (10,000 short ones fit
#: in :data:`MAX_HEADER_BYTES`, and each costs the app a list entry and a look-up)
MAX_HEADERS = 100
#: only a connection that has waited this long on its client may be displaced: a burst of
#: new connections over the cap is then partly served and partly refused (503), rather
#: than its members closing each other before they could send a request
DISPLACE_AFTER_SECONDS = 1.0
#: ... and a request that carries a configured API key may displace one that has waited
#: this long: a keyed client is not refused for slow sockets that were just opened
KEYED_DISPLACE_AFTER_SECONDS = 0.05


def _answer(status: bytes, detail: str, field: str) -> bytes:
    """A whole HTTP/1.1 answer with a JSON ``{"detail", "field"}`` body, closing."""
    body = json.dumps({"detail": detail, "field": field}).encode()
    return (
        b"HTTP/1.1 " + status + b"\r\ncontent-type: application/json\r\nconnection: close\r\n"
        b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body
    )


_TIMED_OUT = _answer(b"408 Request Timeout", "request body not received in time", "body")
#: the answer of a connection displaced to make room (see :meth:`GuardedHttp.shed`)
_SHED = _answer(b"503 Service Unavailable", "too many open connections; retry", "connection")
_SHED = _SHED.replace(b"\r\nconnection: close", b"\r\nretry-after: 1\r\nconnection: close", 1)
#: how long a shed connection's further bytes are read and dropped before it is closed
SHED_LINGER_SECONDS = 2.0


async def _unavailable(send: Any, detail: str) -> None:
    body = json.dumps({"detail": detail, "field": "connection"}).encode()
    headers = [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"retry-after", b"1"), (b"connection", b"close"),
    ]  # fmt: skip
    await send({"type": "http.response.start", "status": 503, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _refuse(scope: Any, receive: Any, send: Any) -> None:
    """The answer on a connection over ``max_connections`` when none could be displaced."""
    await _unavailable(send, "too many open connections; retry")


async def _too_many_headers(scope: Any, receive: Any, send: Any) -> None:
    """The answer to a request with more than :data:`MAX_HEADERS` header lines."""
    body = json.dumps(
        {"detail": f"more than {MAX_HEADERS} request headers", "field": "headers"}
    ).encode()
    headers = [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"),
    ]  # fmt: skip
    await send({"type": "http.response.start", "status": 431, "headers": headers})
    await send({"type": "http.response.body", "body": body, "more_body": False})


async def _too_busy(scope: Any, receive: Any, send: Any) -> None:
    """The answer to a request over ``max_connections`` running requests."""
    await _unavailable(send, "too many requests running; retry")


#: where a connection is: waiting for headers, reading a body, or in the app
HEADERS, BODY, APP = "headers", "body", "app"


@functools.cache
def limits() -> Settings:
    """The connection settings (read once per process: workers are processes)."""
    return load_settings()


@functools.cache
def _key_grants() -> list[Any]:
    from service.edge.app import grants

    return grants(limits())


def _keyed(headers: list[tuple[bytes, bytes]] | None) -> bool:
    """Whether a request's headers carry a configured key (``Authorization: Bearer``)."""
    from service.edge.app import find_grant

    for name, value in headers or ():
        if name == b"authorization":
            scheme, _, key = value.partition(b" ")
            return (
                scheme.lower() == b"bearer" and find_grant(key.strip(), _key_grants()) is not None
            )
    return False


class ConnectionTable:
    """A process's open connections: per-peer counts and the waiting ones, oldest first."""

    def __init__(self) -> None:
        self.open = 0
        self.per_peer: dict[str, int] = {}
        #: connections waiting on their client (headers or body) -> since when (loop time),
        #: in the order they began waiting
        self.waiting: OrderedDict[GuardedHttp, float] = OrderedDict()

    def add(self, conn: GuardedHttp) -> None:
        self.open += 1
        self.per_peer[conn.peer] = self.per_peer.get(conn.peer, 0) + 1

    def remove(self, conn: GuardedHttp) -> None:
        self.open -= 1
        left = self.per_peer.get(conn.peer, 1) - 1
        if left > 0:
            self.per_peer[conn.peer] = left
        else:
            self.per_peer.pop(conn.peer, None)
        self.waiting.pop(conn, None)

    def oldest_waiting(self, before: float, peer: str | None = None) -> GuardedHttp | None:
        """The connection that has waited longest, if it began waiting ``before`` then
        (of ``peer`` when given)."""
        for conn, since in self.waiting.items():
            if since > before:
                return None  # the rest began waiting later still
            if peer is None or conn.peer == peer:
                return conn
        return None


TABLE = ConnectionTable()


class GuardedHttp(HttpToolsProtocol):
    """uvicorn's httptools protocol with the deadlines and caps of the module docstring."""

    phase = HEADERS
    peer = ""
    _deadline: asyncio.TimerHandle | None = None
    _header_bytes = 0
    _armed = 0  # header waits begun: a new one restarts the header byte count
    _counted = False
    _over = False
    _shedding = False

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.limit_concurrency = None  # connections are capped here, running requests below
        self._settings = limits()

    # state -------------------------------------------------------------------------------

    def _enter(self, phase: str, seconds: float | None) -> None:
        self.phase = phase
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        TABLE.waiting.pop(self, None)
        if phase != APP:
            TABLE.waiting[self] = self.loop.time()  # the newest waiter
        if seconds is not None:
            self._deadline = self.loop.call_later(seconds, self._deadline_passed)

    def _to_headers(self) -> None:
        self._header_bytes = 0
        self._armed += 1
        self._enter(HEADERS, self._settings.header_timeout_seconds)

    def _deadline_passed(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        cycle: Any = self.cycle
        if self.phase == BODY and cycle is not None and not cycle.response_started:
            self.transport.write(_TIMED_OUT)
            cycle.response_started = cycle.response_complete = True
        self.transport.close()

    def displace(self) -> None:
        """Shed this waiting connection to make room for a new one."""
        TABLE.waiting.pop(self, None)
        self.shed()

    def shed(self) -> None:
        """Answer 503 (``Retry-After: 1``, closing) and close gracefully: the write side
        at once, the socket once the client closes it or after
        :data:`SHED_LINGER_SECONDS`, its bytes read and dropped meanwhile.

        A plain close reached the client as a TCP reset whenever its request was already
        on the way (a waiting connection is often one whose request the loop has not
        read yet): the kernel answers unread bytes with a reset, and a reset discards
        what the client had not read.  2,000 keyed connections at once to a cap of
        1,000 got 500 resets that way.  A connection whose answer is being written is
        only closed (it is never one that waits)."""
        if self._shedding or self.transport.is_closing():
            return
        self._shedding = True
        if self._counted:  # room made now, not when the client goes
            TABLE.remove(self)
            self._counted = False
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        cycle: Any = self.cycle
        if cycle is not None and cycle.response_started and not cycle.response_complete:
            self.transport.close()
            return
        if cycle is not None and not cycle.response_complete:  # its app reads no more
            cycle.response_started = cycle.response_complete = cycle.disconnected = True
            cycle.message_event.set()
        self.transport.write(_SHED)
        try:
            self.transport.write_eof()
            self.transport.resume_reading()
        except (OSError, RuntimeError):
            self.transport.close()
            return
        self._deadline = self.loop.call_later(SHED_LINGER_SECONDS, self.transport.close)

    # connection --------------------------------------------------------------------------

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(cast(asyncio.Transport, transport))  # a stream's
        self.peer = self.client[0] if self.client else ""
        TABLE.add(self)
        self._counted = True
        self._over = not self._make_room(DISPLACE_AFTER_SECONDS)
        self._to_headers()

    def _make_room(self, grace: float) -> bool:
        """Whether this connection fits its caps, after displacing the longest-waiting
        connection (of this peer, for the per-peer cap) that has waited ``grace``."""
        settings = self._settings
        before = self.loop.time() - grace
        per_peer = settings.max_connections_per_peer
        if per_peer and TABLE.per_peer[self.peer] > per_peer:
            victim = TABLE.oldest_waiting(before, self.peer)
            if victim is None:
                return False
            victim.displace()
        if TABLE.open > settings.max_connections:
            victim = TABLE.oldest_waiting(before)
            if victim is None:
                return False
            victim.displace()
        return True

    def _refused(self) -> bool:
        """At the end of the headers of a connection over a cap: try again to make room
        (a request with a configured key may displace any connection that has waited
        :data:`KEYED_DISPLACE_AFTER_SECONDS`); refused when there is still none.  The
        request is then read and answered 503 (a close at once would reach the client as
        a reset)."""
        if not self._over:
            return False
        self._over = not (
            self._make_room(DISPLACE_AFTER_SECONDS)
            or (_keyed(self.headers) and self._make_room(KEYED_DISPLACE_AFTER_SECONDS))
        )
        return self._over

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None
        if self._counted:
            TABLE.remove(self)
            self._counted = False
        super().connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        if self._shedding:  # answered 503: read and dropped until the client closes
            return
        armed = self._armed
        super().data_received(data)
        # bytes that left the headers incomplete count (not a body that came with them)
        if self.phase == HEADERS and self._armed == armed and not self.transport.is_closing():
            self._header_bytes += len(data)
            if self._header_bytes > MAX_HEADER_BYTES:
                self.transport.close()

    # parser callbacks --------------------------------------------------------------------

    def on_headers_complete(self) -> None:
        self._enter(BODY, self._settings.body_timeout_seconds)
        if len(self.headers) > MAX_HEADERS:
            app, self.app = self.app, _too_many_headers
            try:
                super().on_headers_complete()
            finally:
                self.app = app
        elif self._refused():
            app, self.app = self.app, _refuse
            try:
                super().on_headers_complete()
            finally:
                self.app = app
        elif len(self.tasks) >= self._settings.max_connections:
            app, self.app = self.app, _too_busy
            try:
                super().on_headers_complete()
            finally:
                self.app = app
        else:
            super().on_headers_complete()

    def on_message_complete(self) -> None:
        super().on_message_complete()
        cycle: Any = self.cycle
        if cycle is not None and cycle.response_complete:
            self._to_headers()  # an early answer's body is read: wait for the next request
        else:
            self._enter(APP, None)

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.transport.is_closing():
            return
        if self.phase == APP:
            self._to_headers()
        # in BODY the unread rest of the body is dropped under the body deadline
