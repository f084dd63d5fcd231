"""Keyed connections at once past the connection cap: each one's answer, or a reset.

One command::

    python -m benchmarks.scale.connection_burst [--connections 2000] [--rounds 2] [--library limits]

A real ``banditree serve`` (the embedded store in a temporary data directory, a spare
port, an app key and an admin key, the default ``BANDITREE_MAX_CONNECTIONS`` of 1,000)
gets one model; then ``--connections`` connections are opened at once from 50 loopback
addresses (127.0.0.2-51), each sending one predict with the app key, ``--rounds``
times.  Printed per round: how many were answered 200, 503 with ``Retry-After``, 503
without it, and how many met a TCP reset or another error instead of an answer (issue
41's goal: none).  ``--library limits`` runs it again, in the same run, on uvicorn's own
protocol and ``limit_concurrency`` (docs/decisions/0004).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import httpx

from benchmarks.speed.startup import free_port

ROOT = Path(__file__).resolve().parents[2]
APP, ADMIN = "burst-app-key", "burst-admin-key"
BODY = b'{"context": [0.1, 0.2]}'
REQUEST = (
    b"POST /v1/models/m/predict HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
    b"authorization: Bearer "
    + APP.encode()
    + b"\r\n"
    + f"content-length: {len(BODY)}\r\n\r\n".encode()
    + BODY
)


async def one(port: int, i: int) -> str:
    """One connection's outcome: its status (``503-bare`` without Retry-After) or error."""
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection("127.0.0.1", port, local_addr=(f"127.0.0.{2 + i % 50}", 0)),
            30,
        )
    except (OSError, TimeoutError) as err:
        return f"connect {type(err).__name__}"
    try:
        writer.write(REQUEST)
        await writer.drain()
        head = (await asyncio.wait_for(reader.readuntil(b"\r\n\r\n"), 60)).lower()
        status = head.split(b" ")[1].decode()
        return status if status != "503" or b"\r\nretry-after:" in head else "503-bare"
    except (OSError, TimeoutError, asyncio.IncompleteReadError) as err:
        return type(err).__name__
    finally:
        writer.close()


async def burst(port: int, connections: int) -> tuple[collections.Counter[str], float]:
    started = time.monotonic()
    outcomes = await asyncio.gather(*(one(port, i) for i in range(connections)))
    return collections.Counter(outcomes), time.monotonic() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", type=int, default=2000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument(
        "--library", choices=["limits"], default=None,
        help="run again, in the same run, with uvicorn's own protocol and limit_concurrency "
        "(BANDITREE_LIBRARY_PATHS=limits, docs/decisions/0004)",
    )  # fmt: skip
    args = parser.parse_args()
    for library in ("", *([args.library] if args.library else [])):
        run(args.connections, args.rounds, library)


def run(connections: int, rounds: int, library: str) -> None:
    """Start a server (``library``: ``BANDITREE_LIBRARY_PATHS``) and print each round."""
    port = free_port()
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if not k.startswith("BANDITREE_")}
        env.update(
            PYTHONPATH=str(ROOT), BANDITREE_PORT=str(port), BANDITREE_DATA_DIR=str(Path(tmp)),
            BANDITREE_LOG_LEVEL="warning", BANDITREE_API_KEYS=APP, BANDITREE_ADMIN_KEYS=ADMIN,
            BANDITREE_LIBRARY_PATHS=library,
        )  # fmt: skip
        server = subprocess.Popen([sys.executable, "-m", "banditree", "serve"], env=env)
        try:
            url, deadline = f"http://127.0.0.1:{port}", time.monotonic() + 60
            while True:
                try:
                    if httpx.get(url + "/healthz", timeout=1.0).status_code == 200:
                        break
                except httpx.HTTPError:
                    pass
                if time.monotonic() > deadline:
                    raise SystemExit("the server did not start")
                time.sleep(0.1)
            created = httpx.put(
                url + "/v1/models/m", json={"n_features": 2, "n_actions": 2},
                headers={"Authorization": f"Bearer {ADMIN}"},
            )  # fmt: skip
            created.raise_for_status()
            for round_ in range(rounds):
                outcomes, seconds = asyncio.run(burst(port, connections))
                others = {k: v for k, v in outcomes.items() if k not in ("200", "503")}
                print(json.dumps({
                    "library paths": library, "round": round_ + 1, "connections": connections,
                    "seconds": round(seconds, 2), "200": outcomes["200"],
                    "503 with Retry-After": outcomes["503"], "other (goal: none)": others,
                }))  # fmt: skip
        finally:
            server.send_signal(signal.SIGTERM)
            server.wait(timeout=30)


if __name__ == "__main__":
    main()
