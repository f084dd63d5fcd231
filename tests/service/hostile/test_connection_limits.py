"""Connection caps refuse the part over the limit, per peer too, and bodies have a deadline."""

from __future__ import annotations

import json
import socket
import time
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


def serve(tmp_path: Path, **env: str) -> Served:
    served = Served(
        {"BANDITREE_DATA_DIR": str(tmp_path / "data"), **env}, log_path=tmp_path / "serve.log"
    )
    with served.client() as http:
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
