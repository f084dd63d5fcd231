"""The service's own work per predict: the app driven as ASGI in process, no server, no socket.

One command::

    python -m benchmarks.speed.request_path [--requests 8000] [--connections 8] [--body single|batch] [--repeats 5]

The service's app (``service.main:create_app_from_env``, the embedded store in a
temporary directory, the default DGT of ``benchmarks.speed.service_http``: d=16, K=10)
gets ``--connections`` callers, each posting the benchmark's predict body
(``{"context": [16 floats]}``, or ``--body batch``: 256 rows) one request after the
other through the whole app (the front, the hot path, the tick, the store's commit),
with the ASGI scope uvicorn would give.  Printed: CPU microseconds of the process per
request, each repeat and their minimum (the uvicorn protocol and the socket writes that
a raw endpoint pays too are not in it).

For an instruction count that the machine's load does not move, run it under callgrind
with the markers it calls around the timed repeats (``os.getppid`` before,
``os.getloadavg`` after)::

    valgrind --tool=callgrind --zero-before=os_getppid --dump-before=os_getloadavg \\
        python -m benchmarks.speed.request_path --requests 1600 --repeats 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import tempfile
import time
from collections.abc import MutableMapping
from typing import Any

import httpx

from benchmarks.speed._http_load import MODEL
from benchmarks.speed.service_http import BATCH, CONTEXT


async def per_request(requests: int, connections: int, body: bytes, repeats: int) -> list[float]:
    """CPU microseconds of the process per predict, one figure per repeat."""
    from service.main import create_app_from_env

    app = create_app_from_env()
    headers = [
        (b"host", b"127.0.0.1:18082"),
        (b"user-agent", b"wrk"),
        (b"content-type", b"application/json"),
        (b"content-length", b"%d" % len(body)),
    ]
    statuses: list[int] = []

    async def one() -> None:
        scope: dict[str, Any] = {
            "type": "http", "asgi": {"version": "3.0", "spec_version": "2.3"},
            "http_version": "1.1", "server": ("127.0.0.1", 18082),
            "client": ("127.0.0.1", 50000), "scheme": "http", "method": "POST",
            "root_path": "", "path": "/v1/models/bench/predict",
            "raw_path": b"/v1/models/bench/predict", "query_string": b"",
            "headers": headers, "state": {},
        }  # fmt: skip
        sent = False

        async def receive() -> dict[str, Any]:
            nonlocal sent
            if sent:  # the client stays: no disconnect
                await asyncio.Event().wait()
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}

        async def send(message: MutableMapping[str, Any]) -> None:
            if message["type"] == "http.response.start":
                statuses.append(message["status"])

        await app(scope, receive, send)

    async def caller(count: int) -> None:
        for _ in range(count):
            await one()

    each = max(1, requests // connections)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://bench") as client:
            (await client.put("/v1/models/bench", json=MODEL)).raise_for_status()
        await asyncio.gather(*(caller(each) for _ in range(connections)))  # warm-up
        figures = []
        os.getppid()  # callgrind's --zero-before marker
        for _ in range(repeats):
            started = time.process_time()
            await asyncio.gather(*(caller(each) for _ in range(connections)))
            figures.append((time.process_time() - started) / (each * connections) * 1e6)
        os.getloadavg()  # callgrind's --dump-before marker
    if set(statuses) != {200}:
        raise RuntimeError(f"statuses other than 200: {sorted(set(statuses))}")
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--requests", type=int, default=8000, help="per repeat")
    parser.add_argument("--connections", type=int, default=8)
    parser.add_argument("--body", choices=("single", "batch"), default="single")
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()
    body = json.dumps({"context": CONTEXT} if args.body == "single" else {"contexts": BATCH})
    os.environ.setdefault("BANDITREE_LOG_LEVEL", "warning")
    with tempfile.TemporaryDirectory() as data:
        os.environ["BANDITREE_DATA_DIR"] = data
        figures = asyncio.run(
            per_request(args.requests, args.connections, body.encode(), args.repeats)
        )
    shown = ", ".join(f"{v:.1f}" for v in figures)
    print(f"{args.body} predict: CPU us a request {shown}; min {min(figures):.1f}")


if __name__ == "__main__":
    main()
