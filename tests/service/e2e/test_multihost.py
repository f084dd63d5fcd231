"""Several hosts, made of network namespaces: one is cut off mid-load and nothing is lost.

Hosts (:mod:`tests.service.netns`): ``redis`` (a Redis Cluster of 3 masters and 3
replicas), ``api1`` and ``api2`` (one API process each), ``learn1`` and ``learn2`` (one
learner process each); a small TCP load balancer in the test's namespace forwards to
the API hosts, and the client sends every request through it.  A third of the way, the
API host ``api1`` is cut off (its link down); two thirds of the way, the learner host
leading the model is cut off too.  Every answer is 200, 409 (an earlier attempt of a
feedback was logged) or the documented 503; every acknowledged feedback is in the log
once and learned: the served parameters equal an offline replay (1e-12).
Skipped, with the reason, where network namespaces cannot be made.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from service.store import RedisStore
from tests.service.chaos import ServiceProcess
from tests.service.e2e.test_chaos import CONFIG, FAST, _audit, _export
from tests.service.e2e.test_chaos_cluster import Sender
from tests.service.live_server import free_port
from tests.service.netns import Balancer, Hosts, namespaces_unavailable
from tests.service.own_cluster import OwnCluster, ignore_dropped_nodes, needs_redis_cluster

_WHY = namespaces_unavailable()
pytestmark = [
    pytest.mark.slow,
    needs_redis_cluster,
    ignore_dropped_nodes,
    pytest.mark.skipif(_WHY is not None, reason=f"multi-host test: {_WHY}"),
]

PAIRS = 900
PREFIX = "hosts:"


class _ThroughBalancer:
    """What :class:`Sender` needs of an API process: a URL, always ready."""

    def __init__(self, url: str) -> None:
        self.url = url

    def ready(self) -> bool:
        return True


@pytest.fixture
def hosts() -> Iterator[Hosts]:
    made = Hosts(["redis", "api1", "api2", "learn1", "learn2"])
    try:
        yield made
    finally:
        made.close()


def test_a_host_cut_off_mid_load_loses_nothing_acknowledged(hosts: Hosts, tmp_path: Path) -> None:
    cluster = OwnCluster(
        tmp_path / "cluster", host=hosts.address["redis"], prefix=hosts.prefix("redis")
    )
    processes: list[ServiceProcess] = []
    balancer: Balancer | None = None
    try:
        cluster.start()
        env = {**FAST, "BANDITREE_REDIS_URL": cluster.url, "BANDITREE_REDIS_PREFIX": PREFIX}
        for name, role in (("api1", "api"), ("api2", "api"), ("learn1", "learner"),
                           ("learn2", "learner")):  # fmt: skip
            processes.append(
                ServiceProcess(
                    {**env, "BANDITREE_ROLE": role},
                    log_path=tmp_path / f"{name}.log",
                    serves=role == "api",
                    host=hosts.address[name],
                    prefix=hosts.prefix(name),
                )
            )
        for process in processes:
            process.wait_ready()
        apis = processes[:2]
        balancer = Balancer(free_port(), [(api.host, api.port) for api in apis])
        balancer.start()
        front = f"http://127.0.0.1:{balancer.port}"
        httpx.put(f"{front}/v1/models/m", json=CONFIG, timeout=10).raise_for_status()
        # a connection per request: the balancer spreads them over both API hosts
        sender = Sender([_ThroughBalancer(front)], "m", PAIRS, keepalive=False)  # type: ignore[list-item]
        sender.start()
        _wait_acknowledged(sender, PAIRS // 3)
        hosts.cut("api1")
        _wait_acknowledged(sender, 2 * PAIRS // 3)
        leading = asyncio.run(_leader(cluster.url))  # "<host>:<pid>:<id>"
        learners = zip(processes[2:], ("learn1", "learn2"), strict=True)
        pids = {str(p.process.pid if p.process else ""): name for p, name in learners}
        cut_pid = leading.split(":")[1]
        hosts.cut(pids[cut_pid])  # the host of the learner leading the model
        sender.join(timeout=600)
        assert sender.error is None, sender.error
        assert set(sender.statuses) <= {200, 409, 503}, sender.statuses
        assert balancer.refused.get((apis[0].host, apis[0].port), 0) > 0, "api1 was never cut"
        answer = httpx.post(f"{front}/v1/models/m/checkpoints", timeout=60)
        assert answer.status_code == 201, answer.text
        assert asyncio.run(_leader(cluster.url)).split(":")[1] != cut_pid  # taken over
    finally:
        if balancer is not None:
            balancer.stop()
        for process in processes:
            process.kill()
    print(f"answers through the balancer {sender.statuses}, lost answers {sender.lost}")
    store = RedisStore.from_url(cluster.url, prefix=PREFIX, timeout_seconds=5.0)
    try:
        record, entries, blob = asyncio.run(_export(store, "m"))
        _audit(record, entries, blob, sender.acknowledged)
    finally:
        cluster.stop()


def _wait_acknowledged(sender: Sender, count: int) -> None:
    deadline = time.monotonic() + 300
    while len(sender.acknowledged) < count and sender.is_alive():
        assert time.monotonic() < deadline, f"only {len(sender.acknowledged)} acknowledged"
        time.sleep(0.05)


async def _leader(url: str) -> str:
    store = RedisStore.from_url(url, prefix=PREFIX, timeout_seconds=5.0)
    try:
        lease = await store.lease("m", now=time.time())
        return "" if lease is None else lease.holder
    finally:
        await store.close()
