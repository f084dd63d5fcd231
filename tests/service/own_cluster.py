"""A Redis Cluster of a test's own: 3 masters and 3 replicas on spare loopback ports.

Every node is a ``redis-server --cluster-enabled yes`` with an append-only file in the
test's directory and its cluster bus on a port of its own (``--cluster-port``), joined
by ``redis-cli --cluster create --cluster-replicas 1``.  Only these processes are ever
signalled or stopped.  A short ``cluster-node-timeout`` makes a replica take over
within about two seconds of its master's death.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

import pytest
import redis
from redis.crc import key_slot

from tests.service.live_server import free_port

needs_redis_cluster = pytest.mark.skipif(
    shutil.which("redis-server") is None or shutil.which("redis-cli") is None,
    reason="needs redis-server and redis-cli",
)

#: redis-py's cluster client drops a dead node from its topology without closing the
#: connections that were in use when it died; their finalisers warn (nothing leaks
#: after the store's own close)
ignore_dropped_nodes = pytest.mark.filterwarnings(
    r"ignore:Exception ignored in. <function (ClusterNode|AbstractConnection)\.__del__"
    ":pytest.PytestUnraisableExceptionWarning"
)

#: milliseconds a node may be unreachable before the others fail it over
NODE_TIMEOUT_MS = 1000


@dataclass
class ClusterNode:
    """One node: its port, its bus port and its process (None once stopped)."""

    port: int
    bus_port: int
    process: subprocess.Popen[bytes] | None = None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.poll() is None


def _distinct_free_ports(count: int) -> list[int]:
    ports: list[int] = []
    while len(ports) < count:
        port = free_port()
        if port not in ports:
            ports.append(port)
    return ports


class OwnCluster:
    """``size`` cluster nodes (half masters, half replicas) on spare ports, all stopped after."""

    def __init__(
        self,
        directory: Path,
        *,
        size: int = 6,
        replicas: int = 1,
        host: str = "127.0.0.1",
        prefix: Sequence[str] = (),
        options: Sequence[str] = (),
    ) -> None:
        """``prefix`` runs the nodes inside something (``ip netns exec <ns>``), where they
        listen on ``host``; ``options`` are added to every node's command line."""
        self.options = list(options)
        self.directory = directory
        self.replicas = replicas
        self.host, self.prefix = host, list(prefix)
        ports = _distinct_free_ports(2 * size)
        self.nodes = [ClusterNode(ports[i], ports[size + i]) for i in range(size)]

    @property
    def url(self) -> str:
        """A URL naming the first node (the store finds the others)."""
        return f"redis://{self.host}:{self.nodes[0].port}/0"

    def node(self, port: int) -> ClusterNode:
        return next(node for node in self.nodes if node.port == port)

    def _client(self, port: int) -> redis.Redis:
        return redis.Redis(host=self.host, port=port, socket_timeout=2, socket_connect_timeout=2)

    def start(self) -> None:
        """Start every node and make them a cluster (nodes started are stopped on failure)."""
        try:
            self._start()
        except BaseException:
            self.stop()
            raise

    def _start(self) -> None:
        for node in self.nodes:
            self._spawn(node)
        for node in self.nodes:
            self._wait_ping(node.port)
        addresses = [f"{self.host}:{node.port}" for node in self.nodes]
        subprocess.run(
            [*self.prefix, "redis-cli", "--cluster", "create", *addresses,
             "--cluster-replicas", str(self.replicas), "--cluster-yes"],
            check=True, capture_output=True, timeout=60,
        )  # fmt: skip
        self.wait_ok()

    def _spawn(self, node: ClusterNode) -> None:
        home = self.directory / f"node-{node.port}"
        home.mkdir(parents=True, exist_ok=True)
        args = [
            *self.prefix, "redis-server", "--port", str(node.port), "--bind", self.host,
            "--cluster-enabled", "yes", "--cluster-port", str(node.bus_port),
            "--cluster-config-file", "nodes.conf", "--cluster-node-timeout", str(NODE_TIMEOUT_MS),
            "--dir", str(home), "--save", "", "--appendonly", "yes",
            # a replica's first copy starts at once, not after Redis's 5 s wait for others
            "--repl-diskless-sync-delay", "0",
            "--protected-mode", "no" if self.host != "127.0.0.1" else "yes", *self.options,
        ]  # fmt: skip
        with (home / "redis.log").open("ab") as log:
            node.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)

    def _wait_ping(self, port: int, timeout: float = 10.0) -> None:
        client = self._client(port)
        try:
            deadline = time.monotonic() + timeout
            while True:
                try:
                    client.ping()
                    return
                except redis.ConnectionError:
                    if time.monotonic() > deadline:
                        raise
                    time.sleep(0.05)
        finally:
            client.close()

    def info(self, port: int, section: str) -> dict[str, str]:
        client = self._client(port)
        try:
            found = client.info(section)
            return {str(k): str(v) for k, v in found.items()}
        finally:
            client.close()

    def cluster_info(self, port: int) -> dict[str, str]:
        client = self._client(port)
        try:
            raw = client.execute_command("CLUSTER", "INFO")
        finally:
            client.close()
        text = raw.decode() if isinstance(raw, bytes) else str(raw)
        return dict(line.split(":", 1) for line in text.split() if ":" in line)

    def masters(self) -> list[int]:
        """The ports of the live nodes that are masters now."""
        return [n.port for n in self.nodes if n.alive and self._role(n.port) == "master"]

    def replicas_of(self, port: int) -> list[int]:
        """The ports of the live replicas whose master is ``port``."""
        return [
            n.port
            for n in self.nodes
            if n.alive and self._role(n.port) == "slave" and self._master_port(n.port) == port
        ]

    def _role(self, port: int) -> str:
        return self.info(port, "replication").get("role", "")

    def _master_port(self, port: int) -> int:
        return int(self.info(port, "replication").get("master_port", "0"))

    def master_of_key(self, key: str) -> int:
        """The port of the master that serves ``key``'s slot now."""
        live = next(n.port for n in self.nodes if n.alive)
        client = self._client(live)
        try:
            slot = int(client.execute_command("CLUSTER", "KEYSLOT", key))
            for start, end, master, *_ in client.execute_command("CLUSTER", "SLOTS"):
                if int(start) <= slot <= int(end):
                    return int(master[1])
        finally:
            client.close()
        raise LookupError(f"no master serves slot {slot}")

    def wait_ok(self, timeout: float = 30.0) -> None:
        """Until every live node says ``cluster_state:ok`` and every live replica is in sync
        (its link up, and online in its master's view)."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                if all(self._settled(n.port) for n in self.nodes if n.alive):
                    return
            except redis.RedisError:
                pass
            if time.monotonic() > deadline:
                raise TimeoutError("the cluster did not settle")
            time.sleep(0.1)

    def _settled(self, port: int) -> bool:
        if self.cluster_info(port).get("cluster_state") != "ok":
            return False
        replication = self.info(port, "replication")
        if replication.get("role") == "slave":
            return replication.get("master_link_status") == "up"
        return self._acknowledged(port, int(replication.get("connected_slaves", "0")))

    def _acknowledged(self, port: int, replicas: int) -> bool:
        """Whether the ``replicas`` of master ``port`` acknowledge a write within 1 s.

        A replica whose link is up may still not acknowledge for a second or so after its
        first copy (seen: offset 0 beside the master's 926, ``lag`` 1): a test's first
        ``WAIT`` would time out.  A write to a key of the master's own slots, then
        ``WAIT`` on the same connection, is what a feedback's claim does.
        """
        if not replicas:
            return True
        client = self._client(port)
        try:
            ranges = [
                (int(start), int(end))
                for start, end, master, *_ in client.execute_command("CLUSTER", "SLOTS")
                if int(master[1]) == port
            ]
            key = next(
                name
                for name in (f"own-cluster:settle:{i}" for i in range(1 << 16))
                if any(start <= key_slot(name.encode()) <= end for start, end in ranges)
            )
            client.set(key, b"1", px=60_000)
            return int(client.execute_command("WAIT", replicas, 1000)) >= replicas
        finally:
            client.close()

    def kill(self, port: int, sig: signal.Signals = signal.SIGKILL) -> None:
        node = self.node(port)
        assert node.process is not None
        node.process.send_signal(sig)
        if sig == signal.SIGKILL:
            node.process.wait(timeout=10)

    def restart(self, port: int) -> None:
        """Start a stopped node again (its ``nodes.conf`` makes it rejoin, as a replica of
        the node that took over from it)."""
        node = self.node(port)
        assert not node.alive
        self._spawn(node)
        self._wait_ping(port)

    def wait_failover(self, dead_port: int, timeout: float = 30.0) -> None:
        """Until the cluster serves every slot again without ``dead_port``."""
        deadline = time.monotonic() + timeout
        while dead_port in self._slot_masters():
            if time.monotonic() > deadline:
                raise TimeoutError(f"no replica took over from {dead_port}")
            time.sleep(0.1)
        self.wait_ok(max(1.0, deadline - time.monotonic()))

    def _slot_masters(self) -> set[int]:
        live = next(n.port for n in self.nodes if n.alive)
        client = self._client(live)
        try:
            return {int(row[2][1]) for row in client.execute_command("CLUSTER", "SLOTS")}
        except redis.RedisError:
            return {-1}
        finally:
            client.close()

    def stop(self) -> None:
        for node in self.nodes:
            if node.process is not None and node.process.poll() is None:
                node.process.send_signal(signal.SIGCONT)
                node.process.send_signal(signal.SIGKILL)
                node.process.wait(timeout=10)


@pytest.fixture(scope="module")
def shared_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[OwnCluster]:
    """One cluster for a whole test module (tests keep apart by key prefix); never killed."""
    cluster = OwnCluster(tmp_path_factory.mktemp("cluster"))
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture
def own_cluster(tmp_path: Path) -> Iterator[OwnCluster]:
    """A cluster of the test's own, which it may kill nodes of."""
    cluster = OwnCluster(tmp_path / "cluster")
    try:
        cluster.start()
        yield cluster
    finally:
        cluster.stop()
