"""Connection caps refuse the part over the limit, per peer too, and bodies have a deadline."""

from __future__ import annotations

import asyncio
import json
import socket
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.service.hostile.serve import Served

BODY = b'{"context": [0.1, 0.2]}'
REQUEST = (
    b"POST /v1/models/m/predict HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
    + f"content-length: {len(BODY)}\r\n\r\n".encode()
    + BODY
)


def serve(tmp_path: Path, key: str | None = None, **env: str) -> Served:
    served = Served(
        {"BANDITREE_DATA_DIR": str(tmp_path / "data"), **env}, log_path=tmp_path / "serve.log"
    )
    with served.client(key) as http:
        http.put("/v1/models/m", json={"n_features": 2, "n_actions": 2}).raise_for_status()
    return served


@pytest.fixture
def capped(tmp_path: Path) -> Iterator[Served]:
    served = serve(
        tmp_path, BANDITREE_MAX_CONNECTIONS="50", BANDITREE_MAX_CONNECTIONS_PER_PEER="30"
    )
    yield served
    served.stop()


def status_of(sock: socket.socket) -> tuple[int, bytes]:
    """The status and whole body of the answer on ``sock`` (0 when it closed unanswered).

    The head and the body may arrive in separate reads (uvicorn writes them apart): the
    body is read up to its content-length.
    """
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = sock.recv(65536)
        if not chunk:
            return 0, data
        data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    length = 0
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            length = int(value)
    while len(body) < length:
        chunk = sock.recv(65536)
        if not chunk:
            break
        body += chunk
    return int(head.split(b" ")[1]), body


def test_a_burst_over_the_cap_is_served_up_to_it_and_refused_beyond(capped: Served) -> None:
    # 25 peers (127.0.0.2-26) of 4 connections: 100 at once, twice the cap of 50
    socks: list[socket.socket] = []
    try:
        for i in range(100):
            sock = socket.socket()
            socks.append(sock)
            sock.bind((f"127.0.0.{2 + i % 25}", 0))
            sock.settimeout(20)
            sock.connect(("127.0.0.1", capped.port))
        time.sleep(0.3)  # every connection accepted
        for sock in socks:
            sock.sendall(REQUEST)
        statuses = []
        for sock in socks:
            status, body = status_of(sock)
            statuses.append(status)
            if status == 503:
                assert json.loads(body)["field"] == "connection", body
    finally:
        for sock in socks:
            sock.close()
    assert statuses.count(200) >= 50 and statuses.count(503) > 0, statuses
    assert set(statuses) <= {200, 503}, statuses
    with capped.client() as http:  # and the server serves again once they are gone
        assert http.post("/v1/models/m/predict", json={"context": [0.1, 0.2]}).status_code == 200


def test_one_peer_over_its_cap_does_not_block_the_others(capped: Served) -> None:
    hog: list[socket.socket] = []
    try:
        for _ in range(45):  # 127.0.0.9 holds idle sockets, past its cap of 30
            sock = socket.socket()
            hog.append(sock)
            sock.bind(("127.0.0.9", 0))
            sock.settimeout(20)
            sock.connect(("127.0.0.1", capped.port))
        time.sleep(0.3)
        hog[-1].sendall(REQUEST)
        assert status_of(hog[-1])[0] == 503  # over its own cap: refused, readably
        with httpx.Client(base_url=capped.url, timeout=10) as http:  # another peer: served
            for _ in range(20):
                answer = http.post("/v1/models/m/predict", json={"context": [0.1, 0.2]})
                assert answer.status_code == 200
    finally:
        for sock in hog:
            sock.close()


def test_a_slow_body_is_answered_408_at_its_deadline(tmp_path: Path) -> None:
    served = serve(tmp_path, BANDITREE_BODY_TIMEOUT_SECONDS="1")
    try:
        with socket.create_connection(("127.0.0.1", served.port), timeout=20) as sock:
            sock.sendall(REQUEST[: -len(BODY)] + BODY[:5])  # the rest never comes
            started = time.monotonic()
            status, body = status_of(sock)
            waited = time.monotonic() - started
        assert status == 408 and json.loads(body)["field"] == "body"
        assert 0.8 < waited < 5.0, waited
    finally:
        served.stop()


async def _keyed_burst(port: int, count: int, key: bytes) -> list[str]:
    """``count`` connections opened at once from 20 peers, each sending one keyed predict:
    each one's status, or the error it met instead of an answer."""
    request = REQUEST.replace(b"host: x\r\n", b"host: x\r\nauthorization: Bearer " + key + b"\r\n")

    async def one(i: int) -> str:
        peer = (f"127.0.0.{2 + i % 20}", 0)
        reader, writer = await asyncio.open_connection("127.0.0.1", port, local_addr=peer)
        try:
            writer.write(request)
            await writer.drain()
            head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 30)).lower()
            status = head.split(b" ")[1].decode()
            return status if status != "503" or b"\r\nretry-after: 1\r\n" in head else "503-bare"
        except OSError as err:  # ConnectionResetError, BrokenPipeError
            return type(err).__name__
        finally:
            writer.close()

    return list(await asyncio.gather(*(one(i) for i in range(count))))


def test_a_keyed_burst_over_the_cap_is_answered_never_reset(tmp_path: Path) -> None:
    """Issue 41, item 8: 2,000 keyed connections at once to the default cap of 1,000 got
    500 TCP resets (25 %): a keyed request displaced connections whose requests the loop
    had not read yet, and the plain close reset them.  Displaced ones are now answered
    503 with Retry-After and closed gracefully.  (Here 4 x the cap, at a tenth the size.)"""
    served = serve(
        tmp_path, "admin-key", BANDITREE_MAX_CONNECTIONS="100", BANDITREE_API_KEYS="app-key",
        BANDITREE_ADMIN_KEYS="admin-key",
    )  # fmt: skip
    try:
        statuses = asyncio.run(_keyed_burst(served.port, 400, b"app-key"))
        counts = Counter(statuses)
        assert set(counts) <= {"200", "503"}, counts
        assert counts["200"] >= 100 and counts["503"] > 0, counts
        with served.client("app-key") as http:  # served again once they are gone
            answer = http.post("/v1/models/m/predict", json={"context": [0.1, 0.2]})
            assert answer.status_code == 200
    finally:
        served.stop()
