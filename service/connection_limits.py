"""HTTP protocol with a header deadline and a header size bound, for uvicorn's ``http=``.

uvicorn closes idle keep-alive connections (``timeout_keep_alive``) but holds a fresh
connection that sends nothing, or headers that never complete, forever.  This protocol
closes a connection whose request headers are not complete ``header_timeout_seconds``
after it opened or after its last answer, and one that sends more than
``MAX_HEADER_BYTES`` without completing its headers.  A request whose headers arrived
is never cut by it (slow bodies are bounded by a reverse proxy's body timeout).
"""

from __future__ import annotations

import asyncio
import functools
from typing import Any

from uvicorn.protocols.http.h11_impl import H11Protocol

from service.settings import load_settings

try:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    _BASE: type[asyncio.Protocol] = HttpToolsProtocol
except ImportError:  # pragma: no cover - httptools is optional; h11 is what uvicorn falls back to
    _BASE = H11Protocol

#: a request's header block larger than this closes the connection
MAX_HEADER_BYTES = 65_536


@functools.cache
def header_timeout_seconds() -> float:
    """``BANDITREE_HEADER_TIMEOUT_SECONDS`` (read once per process: workers are processes)."""
    return load_settings().header_timeout_seconds


class HeaderDeadline(_BASE):  # type: ignore[misc,valid-type]
    """uvicorn's HTTP protocol (httptools, else h11) with the header deadline and bound."""

    _deadline: asyncio.TimerHandle | None = None
    _header_bytes = 0

    def _in_request(self) -> bool:
        cycle: Any = self.cycle
        return cycle is not None and not cycle.response_complete

    def _arm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        self._header_bytes = 0
        self._deadline = self.loop.call_later(header_timeout_seconds(), self._deadline_passed)

    def _deadline_passed(self) -> None:
        if not self._in_request() and not self.transport.is_closing():
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        super().data_received(data)
        if self._in_request() or self.transport.is_closing():
            self._header_bytes = 0
            return
        self._header_bytes += len(data)
        if self._header_bytes > MAX_HEADER_BYTES:
            self.transport.close()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
        super().connection_lost(exc)
