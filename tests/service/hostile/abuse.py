"""Slow and idle sockets, held from a process of their own, for the connection-abuse tests.

``slowloris`` sockets send a request line and headers that never end (a header byte
each round); ``slow_body`` sockets send whole headers without a key and a body declared
1 MB long that trickles in (a byte each round).  A socket the server closes is opened
again at the next round (every ``round_seconds``), as slowloris tools do, so the server
sees the same number of sockets for as long as the attack lasts.
"""

from __future__ import annotations

import multiprocessing
import socket
import time
from multiprocessing.synchronize import Event
from typing import Any

LORIS_START = b"POST /v1/models/m/predict HTTP/1.1\r\nHost: x\r\nX-Slow-"
BODY_START = (
    b"POST /v1/models/m/predict HTTP/1.1\r\nHost: x\r\ncontent-type: application/json\r\n"
    b"content-length: 1000000\r\n\r\n{"
)


def _open(port: int, kind: str) -> socket.socket | None:
    sock = socket.socket()
    sock.settimeout(0.5)
    try:
        sock.connect(("127.0.0.1", port))
        sock.sendall(LORIS_START if kind == "loris" else BODY_START)
    except OSError:
        sock.close()
        return None
    sock.setblocking(False)
    return sock


def _alive(sock: socket.socket) -> bool:
    try:
        data = sock.recv(65536)  # answers (a 401 to the slow bodies) are read and dropped
    except BlockingIOError:
        return True
    except OSError:
        return False
    return bool(data)


def run(
    port: int, loris: int, slow_body: int, round_seconds: float, stop: Event, opened: Any
) -> None:
    """Hold ``loris`` + ``slow_body`` sockets on ``port`` until ``stop`` is set."""
    kinds = ["loris"] * loris + ["body"] * slow_body
    socks: list[socket.socket | None] = [None] * len(kinds)
    while not stop.is_set():
        started = time.monotonic()
        for i, kind in enumerate(kinds):
            sock = socks[i]
            if sock is not None:
                try:
                    if not _alive(sock):
                        raise OSError
                    sock.send(b"a" if kind == "loris" else b" ")
                    continue
                except OSError:
                    sock.close()
            socks[i] = _open(port, kind)
            if socks[i] is not None:
                with opened.get_lock():
                    opened.value += 1
        stop.wait(max(0.0, round_seconds - (time.monotonic() - started)))
    for sock in socks:
        if sock is not None:
            sock.close()


class Abuse:
    """The attack in a child process: ``start()``, ``held()``, ``stop()``."""

    def __init__(self, port: int, loris: int, slow_body: int, round_seconds: float = 0.5) -> None:
        context = multiprocessing.get_context("spawn")
        self.stop_event = context.Event()
        self.opened = context.Value("l", 0)
        self.process = context.Process(
            target=run,
            args=(port, loris, slow_body, round_seconds, self.stop_event, self.opened),
            daemon=True,
        )

    def start(self) -> None:
        self.process.start()

    def sockets_opened(self) -> int:
        return int(self.opened.value)

    def stop(self) -> None:
        self.stop_event.set()
        self.process.join(timeout=30)
        if self.process.is_alive():
            self.process.kill()
