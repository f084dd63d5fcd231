"""Where a socket the test process left open was opened.

pytest turns the ``ResourceWarning`` of a socket the garbage collector closes into a
failure of whichever test is running then, often a later test that has nothing to do
with it, and the warning names the socket's addresses, not its origin.  So this plugin
notes, for every socket made in the test process, the test and the frames that made it,
and when the collector finds one still open it writes them to stderr (the failing test's
captured output) before the warning is raised as usual.  Only the test process is
affected: servers run by the tests are processes of their own.
"""

from __future__ import annotations

import _socket
import os
import socket
import sys
import traceback
from typing import Any

#: per socket (by id, while it lives): the test that opened it and the frames that did
_ORIGINS: dict[int, str] = {}
_init, _finalize = socket.socket.__init__, _socket.socket.__del__  # type: ignore[attr-defined]


def _noted_init(self: socket.socket, *args: Any, **kwargs: Any) -> None:
    _init(self, *args, **kwargs)
    test = os.environ.get("PYTEST_CURRENT_TEST", "outside a test")
    _ORIGINS[id(self)] = test + "\n" + "".join(traceback.format_stack(limit=12)[:-1])


def _reported_finalize(self: socket.socket) -> None:
    origin = _ORIGINS.pop(id(self), None)
    if origin is not None and self.fileno() != -1:
        sys.stderr.write(f"socket left open: {self!r}, opened in {origin}")
    _finalize(self)


socket.socket.__init__ = _noted_init  # type: ignore[method-assign]
socket.socket.__del__ = _reported_finalize  # type: ignore[attr-defined]
