"""Scale-out with Redis: a paused learner is fenced out; --workers 2 serve one model."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest

from service.store import RedisStore
from tests.service.chaos import ServiceProcess
from tests.service.conftest import REDIS_URL
from tests.service.live_server import ROOT, free_port

pytestmark = [pytest.mark.redis, pytest.mark.slow]

CONFIG = {"kind": "dgt", "n_features": 3, "n_actions": 2, "height": 2, "accumulate": 1}


def pairs(http: httpx.Client, url: str, n: int) -> None:
    """``n`` predict + feedback pairs (loss 1 for action 0)."""
    answer = http.post(f"{url}/v1/models/m/predict", json={"contexts": [[0.1, 0.2, 0.3]] * n})
    for d in answer.json()["decisions"]:
        body = {"event_id": d["event_id"], "loss": float(d["action"] == 0)}
        http.post(f"{url}/v1/models/m/feedback", json=body).raise_for_status()


def lease_token(prefix: str) -> int:
    async def read() -> int:
        store = RedisStore.from_url(REDIS_URL, prefix=prefix, timeout_seconds=5.0)
        lease = await store.lease("m", now=time.time())
        await store.close()
        return 0 if lease is None else lease.token

    return asyncio.run(read())


def tokens_of_checkpoints(prefix: str) -> list[tuple[int, int]]:
    async def read() -> list[tuple[int, int]]:
        store = RedisStore.from_url(REDIS_URL, prefix=prefix, timeout_seconds=5.0)
        infos = await store.list_checkpoints("m")
        await store.close()
        return [(i.sequence, i.token) for i in reversed(infos)]

    return asyncio.run(read())


def test_a_paused_learner_cannot_overwrite_its_successor(tmp_path: Path, redis_prefix: str) -> None:
    env = {
        "BANDITREE_REDIS_URL": REDIS_URL, "BANDITREE_REDIS_PREFIX": redis_prefix,
        "BANDITREE_LEASE_SECONDS": "1", "BANDITREE_CHECKPOINT_KEEP": "1000",
    }  # fmt: skip
    api = ServiceProcess({**env, "BANDITREE_ROLE": "api"}, log_path=tmp_path / "api.log")
    first = ServiceProcess(
        {**env, "BANDITREE_ROLE": "learner"}, log_path=tmp_path / "a.log", serves=False
    )
    second: ServiceProcess | None = None
    try:
        api.wait_ready()
        first.wait_ready()
        with httpx.Client(timeout=60) as http:
            http.put(f"{api.url}/v1/models/m", json=CONFIG).raise_for_status()
            pairs(http, api.url, 30)
            assert http.post(f"{api.url}/v1/models/m/checkpoints").json()["version"] == 30
            first_token = lease_token(redis_prefix)
            second = ServiceProcess(
                {**env, "BANDITREE_ROLE": "learner"}, log_path=tmp_path / "b.log", serves=False
            )
            second.wait_ready()
            assert first.process is not None
            pairs(http, api.url, 5)  # the first learner learns these, then freezes
            first.process.send_signal(signal.SIGSTOP)
            pairs(http, api.url, 15)
            deadline = time.monotonic() + 60
            while lease_token(redis_prefix) in (0, first_token):
                assert time.monotonic() < deadline, "the lease was never taken over"
                time.sleep(0.1)
            second_token = lease_token(redis_prefix)
            assert http.post(f"{api.url}/v1/models/m/checkpoints").json()["version"] == 50
            first.process.send_signal(signal.SIGCONT)
            deadline = time.monotonic() + 30
            while "lost model m" not in first.log_path.read_text():
                assert time.monotonic() < deadline, first.log_path.read_text()
                time.sleep(0.1)
            pairs(http, api.url, 10)
            final = http.post(f"{api.url}/v1/models/m/checkpoints").json()
            model = http.get(f"{api.url}/v1/models/m").json()
        assert final["version"] == 60 and model["counters"]["feedback"] == 60
        tokens = [token for _, token in tokens_of_checkpoints(redis_prefix)]
        assert tokens == sorted(tokens), "a checkpoint with an older token was written"
        assert tokens[-1] == second_token > first_token
        assert lease_token(redis_prefix) == second_token
    finally:
        for process in (api, first, second):
            if process is not None:
                if process.process is not None:
                    process.process.send_signal(signal.SIGCONT)
                process.kill()


def _scrape(url: str) -> tuple[float, float] | None:
    """(lease held, served offset) of model m from the worker that answered, or None when
    that worker has not discovered the model yet (all requests went to the other one)."""
    text = httpx.get(f"{url}/metrics", timeout=10).text
    held = re.search(r'banditree_learner_lease_held\{model="m"\} (\S+)', text)
    offset = re.search(r'banditree_served_log_offset\{model="m"\} (\S+)', text)
    if held is None or offset is None:
        return None
    return float(held.group(1)), float(offset.group(1))


def test_two_workers_serve_one_model_learned_once(tmp_path: Path, redis_prefix: str) -> None:
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    env = {
        **os.environ, "PYTHONPATH": str(ROOT), "BANDITREE_REDIS_URL": REDIS_URL,
        "BANDITREE_REDIS_PREFIX": redis_prefix, "BANDITREE_SNAPSHOT_POLL_SECONDS": "0.5",
        "BANDITREE_LOG_LEVEL": "warning",
    }  # fmt: skip
    with open(tmp_path / "serve.log", "wb") as log:
        serve = subprocess.Popen(
            [sys.executable, "-m", "banditree", "serve", "--workers", "2", "--port", str(port)],
            env=env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while True:
            assert serve.poll() is None and time.monotonic() < deadline, (
                tmp_path / "serve.log"
            ).read_text()
            try:
                if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                time.sleep(0.2)
        with httpx.Client(timeout=60) as http:
            http.put(f"{url}/v1/models/m", json=CONFIG).raise_for_status()
            for _ in range(10):
                pairs(http, url, 20)
        # feedback stopped: within the staleness bound every worker serves offset 200
        seen: set[float] = set()
        deadline = time.monotonic() + 60
        while seen != {0.0, 1.0}:
            assert time.monotonic() < deadline, f"only workers with lease_held {seen} answered"
            # a worker loads a model on its first request: a new connection reaches either
            httpx.get(f"{url}/v1/models/m", timeout=10).raise_for_status()
            scraped = _scrape(url)
            if scraped is not None and scraped[1] == 200.0:
                seen.add(scraped[0])
            time.sleep(0.02)
        model = httpx.get(f"{url}/v1/models/m", timeout=10).json()
        assert model["version"] == 200 and model["counters"]["feedback"] == 200
    finally:
        serve.send_signal(signal.SIGTERM)
        serve.wait(timeout=60)
