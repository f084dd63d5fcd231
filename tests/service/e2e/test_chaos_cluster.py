"""Chaos on a Redis Cluster: the master of a model's slot SIGKILLed mid-load.

Three API processes and two learner processes run on a cluster of 3 masters and 3
replicas; a client sends predict + feedback pairs to any API process.  Part way, the
master that holds the model's slot is killed with SIGKILL; its replica takes over, and
the killed node is started again (as its supervisor would), rejoining as the replica.
A feedback is acknowledged (200) only once a replica holds it, so at the end every
acknowledged feedback is in the log exactly once, and the served parameters equal an
offline replay of the log (1e-12).  A feedback whose answer was lost (503, or its
decision gone with the failover: 404) is not acknowledged; it is sent again until it
gets 200, or 409 (an earlier attempt was logged), or 404 (the failover took it back).
"""

from __future__ import annotations

import asyncio
import os
import random
import threading
import time
from pathlib import Path

import httpx
import pytest

from service.store import RedisStore
from tests.service.chaos import ServiceProcess
from tests.service.e2e.test_chaos import CONFIG, FAST, _audit, _checkpoint, _export
from tests.service.own_cluster import (
    OwnCluster,
    ignore_dropped_nodes,
    needs_redis_cluster,
    own_cluster,
)

pytestmark = [pytest.mark.slow, needs_redis_cluster, ignore_dropped_nodes]

__all__ = ["own_cluster"]  # the fixture, used by name

#: 1,500 by default; a smaller number gives a quicker run of the same checks
PAIRS = int(os.environ.get("BANDITREE_CLUSTER_CHAOS_PAIRS", "1500"))
PREFIX = "chaos:"


class Sender(threading.Thread):
    """Sends predict + feedback pairs until ``pairs`` are acknowledged; counts answers."""

    def __init__(
        self, apis: list[ServiceProcess], model: str, pairs: int, *, keepalive: bool = True
    ) -> None:
        """``keepalive=False``: a connection per request (a load balancer spreads them)."""
        super().__init__(daemon=True)
        self.apis, self.model, self.pairs = apis, model, pairs
        self.keepalive = keepalive
        self.lost = 0  # requests whose answer never came (a timeout, a dropped connection)
        self.acknowledged: set[str] = set()
        self.taken_back: set[str] = set()  # answered 503, then 404: lost with the failover
        self.statuses: dict[int, int] = {}
        self.error: BaseException | None = None

    def _post(self, http: httpx.Client, path: str, body: dict[str, object]) -> int | None:
        api = random.choice([a for a in self.apis if a.ready()] or self.apis)
        try:
            reply = http.post(f"{api.url}/v1/models/{self.model}/{path}", json=body, timeout=5)
        except httpx.TransportError:
            self.lost += 1
            return None
        self.statuses[reply.status_code] = self.statuses.get(reply.status_code, 0) + 1
        self.last = reply
        return reply.status_code

    def run(self) -> None:
        try:
            self._run()
        except BaseException as err:  # the test reports it
            self.error = err

    def _run(self) -> None:
        rng = random.Random(1)
        deadline = time.monotonic() + 600
        limits = httpx.Limits(max_keepalive_connections=None if self.keepalive else 0)
        with httpx.Client(limits=limits) as http:
            while len(self.acknowledged) < self.pairs:
                assert time.monotonic() < deadline, f"only {len(self.acknowledged)} in time"
                contexts = [[rng.uniform(-1, 1) for _ in range(3)] for _ in range(10)]
                if self._post(http, "predict", {"contexts": contexts}) != 200:
                    time.sleep(0.05)
                    continue
                decisions = self.last.json()["decisions"]
                for decision, context in zip(decisions, contexts, strict=True):
                    self._feedback(http, decision, context, deadline)

    def _feedback(
        self, http: httpx.Client, decision: dict[str, object], context: list[float], deadline: float
    ) -> None:
        loss = float(decision["action"] != int(context[0] > 0))
        body = {"event_id": decision["event_id"], "loss": loss}
        unanswered = False
        while True:
            assert time.monotonic() < deadline, "feedback never answered"
            status = self._post(http, "feedback", body)
            if status is None or status == 503:
                unanswered = True
                time.sleep(0.05)
                continue
            if status == 200 or (status == 409 and unanswered):
                self.acknowledged.add(str(decision["event_id"]))
            elif status == 404:  # the decision was lost with the failover: never acked
                self.taken_back.add(str(decision["event_id"]))
            else:
                raise AssertionError(f"feedback answered {status}: {self.last.text}")
            return


def test_a_master_sigkilled_mid_load_loses_nothing_acknowledged(
    own_cluster: OwnCluster, tmp_path: Path
) -> None:
    env = {**FAST, "BANDITREE_REDIS_URL": own_cluster.url, "BANDITREE_REDIS_PREFIX": PREFIX}
    apis = [
        ServiceProcess({**env, "BANDITREE_ROLE": "api"}, log_path=tmp_path / f"api{i}.log")
        for i in range(3)
    ]
    learners = [
        ServiceProcess(
            {**env, "BANDITREE_ROLE": "learner"}, log_path=tmp_path / f"l{i}.log", serves=False
        )
        for i in range(2)
    ]
    processes = [*apis, *learners]
    try:
        for process in processes:
            process.wait_ready()
        httpx.put(f"{apis[0].url}/v1/models/m", json=CONFIG).raise_for_status()
        victim = own_cluster.master_of_key(f"{PREFIX}log:{{m}}")
        sender = Sender(apis, "m", PAIRS)
        sender.start()
        while len(sender.acknowledged) < PAIRS // 3 and sender.is_alive():
            time.sleep(0.05)
        own_cluster.kill(victim)  # SIGKILL, mid-load
        killed_at = len(sender.acknowledged)
        own_cluster.wait_failover(victim)
        own_cluster.restart(victim)  # it rejoins as the new master's replica
        own_cluster.wait_ok()
        sender.join(timeout=600)
        assert sender.error is None, sender.error
        assert killed_at < PAIRS, "the master was killed after the load"
        assert sender.statuses.get(500, 0) == 0, sender.statuses
        for learner in learners:
            assert learner.ready(), "a learner process died"
        _checkpoint(apis[0], "m")
    finally:
        for process in processes:
            process.kill()
    print(f"answers {sender.statuses}, taken back by the failover {len(sender.taken_back)}")
    store = RedisStore.from_url(own_cluster.url, prefix=PREFIX, timeout_seconds=5.0)
    record, entries, blob = asyncio.run(_export(store, "m"))
    assert not sender.taken_back & {e.event_id for e in entries}
    _audit(record, entries, blob, sender.acknowledged)
