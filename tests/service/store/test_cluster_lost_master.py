"""The Redis store on a cluster without replicas while one master is down: the models
of the other masters are served as before, only the dead master's are unavailable."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.store import IdleLearner, RedisStore, StoreUnavailable
from tests.service.own_cluster import OwnCluster, ignore_dropped_nodes, needs_redis_cluster

pytestmark = [pytest.mark.anyio, needs_redis_cluster, ignore_dropped_nodes]

T0 = 1_000_000.0
NAMES = [f"m{i}" for i in range(12)]  # models on every master


@pytest.fixture
def cluster(tmp_path: Path) -> Iterator[OwnCluster]:
    own = OwnCluster(
        tmp_path / "cluster", size=3, replicas=0,
        options=["--cluster-require-full-coverage", "no"],
    )  # fmt: skip
    try:
        own.start()
        yield own
    finally:
        own.stop()


async def test_a_dead_master_fails_only_its_own_models(cluster: OwnCluster) -> None:
    store = RedisStore.from_url(cluster.url, prefix=f"t{uuid.uuid4().hex[:8]}:")
    try:
        await store.ping()
        tokens = {}
        for name in NAMES:
            await store.hold_model(name)
            token = await store.acquire_lease(name, "h", ttl_seconds=30, now=T0)
            assert token is not None
            tokens[name] = token
        # the client's default node: the one it asked its command table of
        victim = int(store.client.get_default_node().port)
        owners = {name: cluster.master_of_key(store._key("log", name)) for name in NAMES}
        lost = [name for name in NAMES if owners[name] == victim]
        healthy = [name for name in NAMES if owners[name] != victim]
        assert lost and healthy
        cluster.kill(victim)
        for _ in range(3):  # each failure makes the client learn its topology again
            with pytest.raises(StoreUnavailable):
                await store.put_events(lost[0], [("x", "px")], now=T0, ttl_seconds=60)
            for name in healthy:
                await store.put_events(name, [(uuid.uuid4().hex, "p")], now=T0, ttl_seconds=60)
                assert await store.renew_lease(name, "h", tokens[name], ttl_seconds=30, now=T0)
        idle = [IdleLearner(name, tokens[name], 0) for name in NAMES]
        verdicts = await store.scan_idle("h", idle, ttl_seconds=30, now=T0)
        # the lost master's learners are woken (they meet the fault on their own calls)
        assert verdicts == {name: "work" if name in lost else "idle" for name in NAMES}
    finally:
        await store.close()
