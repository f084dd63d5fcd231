"""The store contract on a Redis Cluster (3 masters, 3 replicas) of the module's own.

The contract tests of every concern (``tests/service/store/test_*_contract.py``) run
again here, each with
a key prefix of its own, against a store opened on the URL of one node: the store finds
out that it is a cluster and routes every model's calls to the master of its slot.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator

import pytest
import redis

from service.store import RedisStore, Store
from tests.service.own_cluster import OwnCluster, needs_redis_cluster, shared_cluster
from tests.service.store import (
    test_checkpoints_contract,
    test_decisions_contract,
    test_idle_scan_contract,
    test_leases_contract,
    test_records_contract,
)

pytestmark = [pytest.mark.anyio, needs_redis_cluster]

__all__ = ["shared_cluster"]  # the fixture, used by name

CONTRACTS = (
    test_checkpoints_contract, test_decisions_contract, test_idle_scan_contract,
    test_leases_contract, test_records_contract,
)  # fmt: skip

# every contract test (they take the ``store`` fixture), under the same name
for _contract in CONTRACTS:
    for _name in dir(_contract):
        if _name.startswith("test_"):
            assert _name not in globals(), _name
            globals()[_name] = getattr(_contract, _name)


def delete_cluster_prefix(cluster: OwnCluster, prefix: str) -> None:
    """Every key under ``prefix`` on every master (a Redis that lost its data)."""
    for port in cluster.masters():
        client = redis.Redis(port=port)
        try:
            keys = list(client.scan_iter(match=prefix + "*", count=1000))
            for key in keys:  # one by one: they live in many slots
                client.delete(key)
        finally:
            client.close()


@pytest.fixture
async def store(
    shared_cluster: OwnCluster, monkeypatch: pytest.MonkeyPatch
) -> AsyncIterator[Store]:
    """A Redis store on one node of the cluster, keys under a prefix of this test's."""
    monkeypatch.setattr(
        test_records_contract,
        "delete_prefix",
        lambda prefix: delete_cluster_prefix(shared_cluster, prefix),
    )
    opened = RedisStore.from_url(
        shared_cluster.url,
        prefix=f"banditree-test:{uuid.uuid4().hex}:",
        timeout_seconds=2.0,
        wait_timeout_ms=1500,  # a replica's acknowledgement on a busy test machine
    )
    await opened.ping()
    assert opened.cluster
    yield opened
    await opened.close()
