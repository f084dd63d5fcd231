"""Chaos on a Redis Cluster without replicas: a master killed and restarted empty.

Three masters and no replica; one service process (serving and learning) holds nine
models under traffic.  The master that holds some of the models' keys, but not the
records (the ``{global}`` slot), is killed with SIGKILL, left down a few seconds, then
started again with its data removed (its ``nodes.conf`` kept: it rejoins with its
slots, empty).  At no time does a request answer 500; while it is down, the models on
the other masters keep learning; within 20 s of its return every model takes feedback
and learns it (its served feedback count moves).
"""

from __future__ import annotations

import shutil
import threading
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from tests.service.chaos import ServiceProcess
from tests.service.e2e.test_chaos import FAST
from tests.service.own_cluster import OwnCluster, ignore_dropped_nodes, needs_redis_cluster

pytestmark = [
    pytest.mark.slow,
    needs_redis_cluster,
    ignore_dropped_nodes,
]

PREFIX = "empty:"
MODELS = [f"m{i}" for i in range(9)]
CONFIG = {"kind": "linear", "n_features": 3, "n_actions": 2}
DOWN_SECONDS = 5.0
HEAL_SECONDS = 20.0


class Traffic:
    """Predict + feedback pairs on every model, a thread each (a model whose requests
    wait does not hold the others'); answers counted, each model's last 200 noted."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.statuses: Counter[int] = Counter()
        self.fed: dict[str, float] = {}  # model -> monotonic time of its last 200 feedback
        self.halt = threading.Event()
        self._lock = threading.Lock()
        self._threads = [
            threading.Thread(target=self._run, args=(name,), daemon=True) for name in MODELS
        ]

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def join(self, timeout: float) -> None:
        for thread in self._threads:
            thread.join(timeout)

    def _run(self, name: str) -> None:
        with httpx.Client(base_url=self.url, timeout=5.0) as http:
            while not self.halt.is_set():
                self._pair(http, name)
                time.sleep(0.02)

    def _count(self, status: int) -> None:
        with self._lock:
            self.statuses[status] += 1

    def _pair(self, http: httpx.Client, name: str) -> None:
        try:
            decision = http.post(f"/v1/models/{name}/predict", json={"context": [0.1, -0.2, 0.3]})
            self._count(decision.status_code)
            if decision.status_code != 200:
                time.sleep(0.01)
                return
            body = {"event_id": decision.json()["event_id"], "loss": 0.5}
            answer = http.post(f"/v1/models/{name}/feedback", json=body)
        except httpx.TransportError:
            self._count(0)
            return
        self._count(answer.status_code)
        if answer.status_code == 200:
            self.fed[name] = time.monotonic()


def feedback_counts(url: str) -> dict[str, int]:
    """The feedback count of each model's served snapshot (-1: not answered)."""
    counts = {}
    for name in MODELS:
        try:
            answer = httpx.get(f"{url}/v1/models/{name}", timeout=2.0)
            counts[name] = answer.json()["counters"]["feedback"] if answer.is_success else -1
        except httpx.TransportError:
            counts[name] = -1
    return counts


def test_a_master_restarted_empty_heals_every_model(tmp_path: Path) -> None:
    # the other masters go on serving their slots while one is away
    cluster = OwnCluster(
        tmp_path / "cluster", size=3, replicas=0,
        options=["--cluster-require-full-coverage", "no"],
    )  # fmt: skip
    cluster.start()
    env = {**FAST, "BANDITREE_REDIS_URL": cluster.url, "BANDITREE_REDIS_PREFIX": PREFIX}
    server = ServiceProcess(env, log_path=tmp_path / "server.log")
    traffic = Traffic(server.url)
    try:
        server.wait_ready()
        for name in MODELS:
            httpx.put(f"{server.url}/v1/models/{name}", json=CONFIG).raise_for_status()
        records = cluster.master_of_key(f"{PREFIX}{{global}}:models")
        owners = {name: cluster.master_of_key(f"{PREFIX}log:{{{name}}}") for name in MODELS}
        victim = Counter(p for p in owners.values() if p != records).most_common(1)[0][0]
        lost = [name for name, port in owners.items() if port == victim]
        healthy = [name for name in MODELS if name not in lost]
        traffic.start()
        time.sleep(2.0)
        cluster.kill(victim)
        down_at = time.monotonic()
        before = feedback_counts(server.url)
        time.sleep(DOWN_SECONDS)
        during = feedback_counts(server.url)
        moved = [name for name in healthy if during[name] > before[name]]
        assert moved == healthy, (before, during)  # the other masters' models learn on
        shutil.rmtree(tmp_path / "cluster" / f"node-{victim}" / "appendonlydir")
        cluster.restart(victim)  # nodes.conf kept: back with its slots, and empty
        back_at = time.monotonic()
        cluster.wait_ok()
        healed = feedback_counts(server.url)
        deadline = back_at + HEAL_SECONDS
        while time.monotonic() < deadline:
            now = feedback_counts(server.url)
            fed_after = all(traffic.fed.get(n, 0.0) > back_at for n in MODELS)
            if fed_after and all(now[n] > max(healed[n], 0) for n in MODELS):
                break
            time.sleep(0.5)
        else:
            raise AssertionError(
                f"not healed {HEAL_SECONDS:.0f} s after the return (lost: {lost}): "
                f"{healed} -> {feedback_counts(server.url)}, fed after: "
                f"{sorted(n for n in MODELS if traffic.fed.get(n, 0.0) > back_at)}, "
                f"answers {dict(traffic.statuses)}"
            )
        assert down_at < back_at
    finally:
        traffic.halt.set()
        traffic.join(timeout=30)
        server.kill()
        cluster.stop()
    assert traffic.statuses[500] == 0, dict(traffic.statuses)
