"""A request with too many header lines is answered 431 (issue 41, item 8), by
``banditree serve``'s own HTTP protocol: round 3 found 10,000 request headers accepted
(they fit in the 64 KB header bound)."""

from __future__ import annotations

import socket

import pytest

from service.edge.connection_limits import MAX_HEADERS
from tests.service.hostile.serve import Served


def _status(port: int, header_lines: int) -> bytes:
    """The status line of a predict sent with ``header_lines`` extra header lines."""
    body = b'{"context": [0.1, 0.2]}'
    extra = b"".join(b"x-h%d: v\r\n" % i for i in range(header_lines))
    request = (
        b"POST /v1/models/m/predict HTTP/1.1\r\nhost: t\r\ncontent-type: application/json\r\n"
        + extra + b"content-length: %d\r\n\r\n" % len(body) + body
    )  # fmt: skip
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(request)
        return sock.recv(65536).split(b"\r\n", 1)[0]


@pytest.fixture(scope="module")
def served(tmp_path_factory: pytest.TempPathFactory) -> Served:
    tmp = tmp_path_factory.mktemp("headers")
    server = Served({"BANDITREE_DATA_DIR": str(tmp / "data")}, log_path=tmp / "serve.log")
    with server.client() as http:
        assert http.put("/v1/models/m", json={"n_features": 2, "n_actions": 2}).status_code == 201
    yield server  # type: ignore[misc]
    server.stop()


@pytest.mark.parametrize(("lines", "status"), [(20, b"200"), (MAX_HEADERS, b"431"),
                                                (10_000, b"431")])  # fmt: skip
def test_header_lines_past_the_bound_get_431(served: Served, lines: int, status: bytes) -> None:
    assert _status(served.port, lines).split()[1] == status
