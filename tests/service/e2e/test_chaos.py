"""Chaos: processes SIGKILLed every 1-3 s while a client sends 5,000 predict + feedback pairs.

At the end every acknowledged feedback is in the log exactly once, the learner applied
each once, and the served parameters equal an offline replay of the exported log (1e-12).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import time
from pathlib import Path

import httpx
import numpy as np
import pytest

from banditree.persistence import loads
from service.domain.runtime.replay import replay
from service.store import LogEntry, RedisStore, SqliteStore, Store
from tests.service.chaos import Killer, ServiceProcess, send_pairs
from tests.service.conftest import REDIS_URL

pytestmark = pytest.mark.slow

#: 5,000 by default; a smaller number gives a quicker run of the same checks
PAIRS = int(os.environ.get("BANDITREE_CHAOS_PAIRS", "5000"))
CONFIG = {"kind": "dgt", "n_features": 3, "n_actions": 2, "height": 2, "accumulate": 2}
FAST = {
    "BANDITREE_LEASE_SECONDS": "1",
    "BANDITREE_SNAPSHOT_POLL_SECONDS": "0.5",
    "BANDITREE_CHECKPOINT_KEEP": "100000",  # keep the whole log for the audit
    "BANDITREE_LOG_LEVEL": "warning",
}


async def _export(store: Store, name: str) -> tuple[dict[str, object], list[LogEntry], bytes]:
    record = json.loads(await store.load_model(name) or "{}")
    entries: list[LogEntry] = []
    while batch := await store.read_log(
        name, after=entries[-1].offset if entries else 0, limit=1000
    ):
        entries.extend(batch)
    newest = (await store.list_checkpoints(name))[0]
    blob = await store.load_checkpoint(name, newest.sequence)
    assert blob is not None and newest.offset == entries[-1].offset
    await store.close()
    return record, entries, blob


def _audit(
    record: dict[str, object], entries: list[LogEntry], blob: bytes, acked: set[str]
) -> None:
    ids = [e.event_id for e in entries]
    assert len(ids) == len(set(ids)), "a feedback was logged twice"
    assert set(ids) == acked, "the log differs from the acknowledged feedback"
    assert [e.offset for e in entries] == list(range(1, len(entries) + 1))
    served = loads(blob)
    assert isinstance(record["config"], dict) and isinstance(record["uid"], str)
    offline = replay(record["config"], entries, uid=record["uid"], default_loss=None)
    assert served.counters["feedback"] == offline.counters["feedback"] == len(acked)
    assert served.version == offline.version
    ours, theirs = served.parameters(), offline.parameters()  # type: ignore[attr-defined]
    assert set(ours) == set(theirs)
    for key in ours:
        np.testing.assert_allclose(ours[key], theirs[key], rtol=0, atol=1e-12)


def _under_chaos(
    apis: list[ServiceProcess], processes: list[ServiceProcess], *, kills: int
) -> set[str]:
    """``PAIRS`` pairs, then more rounds of them until the killer has struck ``kills``
    times: a fast service would otherwise finish before the chaos began."""
    acked = send_pairs(apis, "m", PAIRS, deadline_seconds=600)
    deadline = time.monotonic() + 300
    while sum(p.kills for p in processes) < kills and time.monotonic() < deadline:
        acked |= send_pairs(apis, "m", max(PAIRS // 5, 200), deadline_seconds=600)
    return acked


def _checkpoint(api: ServiceProcess, model: str) -> None:
    api.wait_ready()
    answer = httpx.post(f"{api.url}/v1/models/{model}/checkpoints", timeout=60)
    assert answer.status_code == 201, answer.text


@pytest.mark.redis
def test_chaos_with_redis_two_apis_and_a_learner(tmp_path: Path, redis_prefix: str) -> None:
    env = {**FAST, "BANDITREE_REDIS_URL": REDIS_URL, "BANDITREE_REDIS_PREFIX": redis_prefix}
    apis = [
        ServiceProcess({**env, "BANDITREE_ROLE": "api"}, log_path=tmp_path / f"api{i}.log")
        for i in range(2)
    ]
    learner = ServiceProcess(
        {**env, "BANDITREE_ROLE": "learner"}, log_path=tmp_path / "learner.log", serves=False
    )
    processes = [*apis, learner]
    try:
        for process in processes:
            process.wait_ready()
        httpx.put(f"{apis[0].url}/v1/models/m", json=CONFIG).raise_for_status()
        killer = Killer(processes, seed=11)
        killer.start()
        try:
            acked = _under_chaos(apis, processes, kills=3)
        finally:
            killer.stop()
        assert sum(p.kills for p in processes) >= 3
        learner.wait_ready()
        _checkpoint(apis[0], "m")
    finally:
        for process in processes:
            process.kill()
    store = RedisStore.from_url(REDIS_URL, prefix=redis_prefix, timeout_seconds=5.0)
    _audit(*asyncio.run(_export(store, "m")), acked)


def test_chaos_with_the_embedded_store(tmp_path: Path) -> None:
    data = tmp_path / "data"
    server = ServiceProcess({**FAST, "BANDITREE_DATA_DIR": str(data)}, log_path=tmp_path / "s.log")
    try:
        server.wait_ready()
        httpx.put(f"{server.url}/v1/models/m", json=CONFIG).raise_for_status()
        killer = Killer([server], seed=12)
        killer.start()
        try:
            acked = _under_chaos([server], [server], kills=2)
        finally:
            killer.stop()
        assert server.kills >= 2
        _checkpoint(server, "m")
    finally:
        server.kill(signal.SIGKILL)
    _audit(*asyncio.run(_export(SqliteStore(data), "m")), acked)
