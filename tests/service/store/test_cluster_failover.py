"""The Redis store when a cluster changes hands: replicas acknowledge a feedback, a dead
master is 503 until its replica takes over, and nothing acknowledged is lost."""

from __future__ import annotations

import asyncio
import signal
import time
import uuid
from collections.abc import AsyncIterator

import pytest
import redis

from service.store import RedisStore, StoreUnavailable
from service.store.base import store_budget
from service.store.redis.cluster import global_key
from tests.service.own_cluster import (
    OwnCluster,
    ignore_dropped_nodes,
    needs_redis_cluster,
    own_cluster,
)
from tests.service.own_redis import OwnRedis

pytestmark = [pytest.mark.anyio, needs_redis_cluster, ignore_dropped_nodes]

__all__ = ["own_cluster"]  # the fixture, used by name

T0 = 1_000_000.0


@pytest.fixture
async def cluster_store(own_cluster: OwnCluster) -> AsyncIterator[RedisStore]:
    opened = RedisStore.from_url(  # a replica acknowledges in 400 ms even on a busy machine
        own_cluster.url,
        prefix=f"t{uuid.uuid4().hex[:8]}:",
        timeout_seconds=0.5,
        wait_timeout_ms=400,
    )
    await opened.ping()
    yield opened
    await opened.close()


async def test_a_cluster_feedback_waits_for_a_replica(
    own_cluster: OwnCluster, cluster_store: RedisStore
) -> None:
    store = cluster_store
    assert store.cluster and store.wait_replicas == 1  # every master has a replica
    await store.hold_model("m")
    await store.put_events("m", [("a", "pa"), ("b", "pb")], now=T0, ttl_seconds=60)
    assert (await store.append_feedback("m", "a", "{}", now=T0)).status == "claimed"
    master = own_cluster.master_of_key(store._key("log", "m"))
    (replica,) = own_cluster.replicas_of(master)
    assert [e.event_id for e in await store.read_log("m", after=0, limit=10)] == ["a"]
    own_cluster.kill(replica, signal.SIGSTOP)  # alive, but acknowledges nothing
    try:
        with pytest.raises(StoreUnavailable, match="replica"):
            await store.append_feedback("m", "b", "{}", now=T0)
        with pytest.raises(StoreUnavailable, match="replica"):  # nothing a learner could
            await store.read_log("m", after=0, limit=10)  # apply and a failover take back
    finally:
        own_cluster.kill(replica, signal.SIGCONT)
    own_cluster.wait_ok()  # the replica in sync again
    # the claim stayed on the master: the retry is told it was received
    assert (await store.append_feedback("m", "b", "{}", now=T0)).status == "duplicate"
    assert [e.event_id for e in await store.read_log("m", after=0, limit=10)] == ["a", "b"]


async def test_a_dead_master_is_unavailable_then_its_replica_serves_everything_acknowledged(
    own_cluster: OwnCluster, cluster_store: RedisStore
) -> None:
    store = cluster_store
    names = [f"m{i}" for i in range(6)]  # models on every master
    for name in names:
        await store.hold_model(name)
        await store.put_events(
            name, [(f"e{j}", f"p{j}") for j in range(40)], now=T0, ttl_seconds=600
        )
    for node in own_cluster.nodes:  # the set-up on every replica before the chaos (a
        # loaded machine lets replication lag: a failover would lose the holds themselves)
        if node.alive and own_cluster.info(node.port, "replication").get("role") == "master":
            assert redis.Redis(port=node.port).wait(1, 10_000) >= 1
    acked: dict[str, list[str]] = {name: [] for name in names}
    errors: list[BaseException] = []
    victim = own_cluster.master_of_key(store._key("log", "m0"))

    async def feed(name: str) -> None:
        for j in range(40):
            try:
                with store_budget(1.0):
                    found = await store.append_feedback(name, f"e{j}", "{}", now=T0)
            except StoreUnavailable as err:
                errors.append(err)
                await asyncio.sleep(0.05)
                continue
            if found.status == "claimed":
                acked[name].append(f"e{j}")
            await asyncio.sleep(0.02)

    feeding = asyncio.gather(*(feed(name) for name in names))
    await asyncio.sleep(0.2)
    own_cluster.kill(victim)  # SIGKILL, mid-load
    await feeding
    own_cluster.wait_failover(victim)
    assert errors, "the dead master's models saw no 503 at all"
    # the new master has no replica to acknowledge a feedback: 503 until one joins
    await store.put_events("m0", [("lonely", "p")], now=T0, ttl_seconds=600)
    with pytest.raises(StoreUnavailable, match="replica"):
        await store.append_feedback("m0", "lonely", "{}", now=T0)
    own_cluster.restart(victim)  # as its supervisor would: it rejoins as the replica
    own_cluster.wait_ok()
    assert own_cluster.replicas_of(own_cluster.master_of_key(store._key("log", "m0"))) == [victim]
    started = time.monotonic()
    for attempt in range(100):  # as a client does on 503: the replica may still catch up
        late = f"late{attempt}"
        await store.put_events("m0", [(late, "p")], now=T0, ttl_seconds=600)
        try:
            assert (await store.append_feedback("m0", late, "{}", now=T0)).offset > 0
            break
        except StoreUnavailable:
            assert time.monotonic() - started < 10, "the rejoined replica never acknowledged"
            await asyncio.sleep(0.1)
    # the audit reads the masters as they are (no wait for replicas: a busy machine)
    audit = RedisStore.from_url(own_cluster.url, prefix=store.prefix, wait_replicas=0)
    try:
        for name in names:  # every acknowledged feedback is in the log, once
            entries = await audit.read_log(name, after=0, limit=100)
            logged = [e.event_id for e in entries]
            assert len(logged) == len(set(logged))
            assert set(acked[name]) <= set(logged), name
            assert [e.offset for e in entries] == list(range(1, len(entries) + 1))
    finally:
        await audit.close()


async def test_a_cluster_finds_the_records_of_a_single_redis(own_cluster: OwnCluster) -> None:
    prefix = "legacy:"
    client = redis.RedisCluster(host="127.0.0.1", port=own_cluster.nodes[0].port)
    try:
        client.hset(prefix + "models", mapping={"a": "record-a", "b": "record-b"})
        client.set(prefix + "epoch", "old-epoch")
        client.set(prefix + "changes", 7)
    finally:
        client.close()
    store = RedisStore.from_url(own_cluster.url, prefix=prefix)
    try:
        await store.ping()
        assert await store.load_models() == {"a": "record-a", "b": "record-b"}
        assert await store.epoch() == "old-epoch"
        assert await store.changes() == 7
        assert await store.save_model("c", "record-c") == 8
        assert global_key(prefix, "models", cluster=True) == "legacy:{global}:models"
    finally:
        await store.close()
    again = RedisStore.from_url(own_cluster.url, prefix=prefix)
    try:  # copied once: what the store wrote since is kept
        await again.ping()
        assert set(await again.load_models()) == {"a", "b", "c"}
    finally:
        await again.close()


async def test_a_single_redis_with_a_replica_waits_for_it(
    own_redis: OwnRedis, tmp_path_factory: pytest.TempPathFactory
) -> None:
    from tests.service.live_server import free_port

    home = tmp_path_factory.mktemp("replica")  # its copy of the data goes there
    replica = OwnRedis(free_port(), home / "redis.log", aof_dir=home)
    replica.start()
    try:
        link = redis.Redis(port=replica.port)
        link.replicaof("127.0.0.1", own_redis.port)
        link.close()
        link = redis.Redis(port=replica.port)
        for _ in range(200):  # until the first sync is done
            if link.info("replication").get("master_link_status") == "up":
                break
            time.sleep(0.05)
        link.close()
        # and until the replica acknowledges writes: just after its first sync it may
        # still be loading the copy or rewriting its AOF (past 400 ms on a loaded machine)
        master = redis.Redis(port=own_redis.port)
        master.set("replica-warm-up", "1")
        assert master.wait(1, 10_000) == 1
        master.close()
        url = f"redis://127.0.0.1:{own_redis.port}/0"
        store = RedisStore.from_url(url, prefix="w:", timeout_seconds=1.0, wait_timeout_ms=400)
        unwaited = RedisStore.from_url(url, prefix="w:", wait_replicas=0)
        try:
            await store.ping()
            await unwaited.ping()
            assert not store.cluster and store.wait_replicas == 1
            await store.hold_model("m")
            await store.put_events("m", [("a", "pa"), ("b", "pb")], now=T0, ttl_seconds=60)
            assert (await store.append_feedback("m", "a", "{}", now=T0)).status == "claimed"
            replica.signal(signal.SIGSTOP)
            try:
                with pytest.raises(StoreUnavailable, match="replica"):
                    await store.append_feedback("m", "b", "{}", now=T0)
                await unwaited.put_events("m", [("c", "pc")], now=T0, ttl_seconds=60)
                assert (await unwaited.append_feedback("m", "c", "{}", now=T0)).offset == 3
            finally:
                replica.signal(signal.SIGCONT)
        finally:
            await store.close()
            await unwaited.close()
    finally:
        assert replica.process is not None
        replica.process.kill()
        replica.process.wait(timeout=10)


async def test_a_single_redis_without_replicas_does_not_wait(own_redis: OwnRedis) -> None:
    store = RedisStore.from_url(f"redis://127.0.0.1:{own_redis.port}/0", prefix="n:")
    try:
        await store.ping()
        assert not store.cluster and store.wait_replicas == 0
    finally:
        await store.close()


async def _holding_m(own_cluster: OwnCluster) -> RedisStore:
    """A store of its own on the cluster (no wait for replicas) that holds model ``m``."""
    store = RedisStore.from_url(
        own_cluster.url, prefix=f"t{uuid.uuid4().hex[:8]}:", timeout_seconds=0.5, wait_replicas=0
    )
    await store.ping()
    await store.hold_model("m")
    return store


async def test_closing_the_store_closes_connections_to_a_node_dropped_from_the_topology(
    own_cluster: OwnCluster,
) -> None:
    store = await _holding_m(own_cluster)
    victim = own_cluster.master_of_key(store._key("log", "m"))
    node = store.client.get_node(host="127.0.0.1", port=victim)
    in_use = node.acquire_connection()  # a call in flight on the master when it dies
    await in_use.connect()
    own_cluster.kill(victim)
    own_cluster.wait_failover(victim)
    started = time.monotonic()
    while True:  # a call learns the topology again: the dead master leaves it
        try:
            await store.put_events("m", [("e", "p")], now=T0, ttl_seconds=60)
            break
        except StoreUnavailable:
            assert time.monotonic() - started < 10, "the store never found the new master"
            await asyncio.sleep(0.1)
    assert store.client.get_node(host="127.0.0.1", port=victim) is None
    assert in_use.is_connected  # never released: redis-py's own close would not reach it
    await store.close()
    assert not in_use.is_connected


async def test_closing_the_store_after_a_call_failed_on_a_dead_master_closes_every_connection(
    own_cluster: OwnCluster,
) -> None:
    store = await _holding_m(own_cluster)
    await store.put_events("m", [("e", "p")], now=T0, ttl_seconds=60)
    own_cluster.kill(own_cluster.master_of_key(store._key("log", "m")))
    with pytest.raises(StoreUnavailable):  # before any replica took over
        await store.put_events("m", [("f", "p")], now=T0, ttl_seconds=60)
    manager = store.client.nodes_manager
    nodes = [*manager.nodes_cache.values(), *manager.startup_nodes.values()]
    connections = [c for node in nodes for c in node._connections]
    assert any(c.is_connected for c in connections)  # to the masters still alive
    await store.close()  # redis-py's own close does nothing after such a failure
    assert not any(c.is_connected for c in connections)
