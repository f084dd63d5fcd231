"""Redis Cluster under the Redis store: detection, the client, global keys, routing.

``BANDITREE_REDIS_URL`` may name any node of a cluster: :func:`is_cluster` asks it
(``INFO cluster``) at start, and the store then talks through
:class:`redis.asyncio.cluster.RedisCluster`, which follows ``MOVED``/``ASK`` redirections
and learns the new topology after a failover.  Every key of one model carries the hash
tag ``{name}``, so each script and transaction touches one slot.  The global keys (the
model records, the store's epoch, the learner processes' heartbeats) carry a hash tag of
their own in a cluster, ``<prefix>{global}:models``, ``<prefix>{global}:epoch`` and
``<prefix>{global}:learners``: they live in one slot, so the records and the epoch are
lost (or kept) together, never one without the other.  A
single Redis keeps the names of earlier releases (``<prefix>models``, ``<prefix>epoch``);
a cluster holding those (imported from a single Redis) has them copied to the tagged
names at start (:func:`migrate_global_keys`).  The snapshot channel is a plain Pub/Sub
channel: a cluster forwards a ``PUBLISH`` to every node, so a subscriber may listen on
any one.

Calls that must share one connection with a ``WAIT`` (a feedback's claim) go through
:class:`SlotWires`: one kept-open connection per master, chosen by the key's slot.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import redis
from redis.asyncio.cluster import PRIMARY, ClusterNode, RedisCluster
from redis.asyncio.connection import Connection
from redis.asyncio.retry import Retry
from redis.backoff import ExponentialBackoff
from redis.exceptions import (
    ClusterDownError,
    NoScriptError,
    RedisError,
    ResponseError,
)
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

from service.store.redis.wire import WireConnection

#: error replies of a cluster between two topologies: learn it again, send once more
_REDIRECTED = ("MOVED", "ASK", "TRYAGAIN", "CLUSTERDOWN")


def is_cluster(url: str, timeout_seconds: float) -> bool:
    """Whether ``url`` names a node of a Redis Cluster (False when it cannot be asked:
    the store's first ``ping`` then reports the Redis as unavailable)."""
    client = redis.Redis.from_url(
        url, socket_timeout=timeout_seconds, socket_connect_timeout=timeout_seconds
    )
    try:
        return bool(int(client.info("cluster").get("cluster_enabled", 0)))
    except (RedisError, OSError, ValueError):
        return False
    finally:
        client.close()


class _NodeTable(dict[str, ClusterNode]):
    """A client's table of nodes (name -> node) that remembers the nodes taken out of it."""

    def __init__(self, nodes: dict[str, ClusterNode], dropped: list[ClusterNode]) -> None:
        super().__init__(nodes)
        self.dropped = dropped

    def pop(self, name: str, *default: Any) -> Any:
        node = super().pop(name, *default)
        if isinstance(node, ClusterNode):
            self.dropped.append(node)
        return node


class _Connection(Connection):
    """redis-py's connection, whose write on a socket the peer closed (a master killed)
    fails with ``ConnectionError``, which the cluster client retries and the store maps
    to 503.  Two other errors escaped as 500s:

    * on uvloop, a ``RuntimeError`` ("the handler is closed");
    * an ``AttributeError`` when another task disconnected the connection between
      redis-py's check that it is connected and its write (its writer is then None).
    """

    async def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        try:
            await super().send_packed_command(command, check_health)
        except RuntimeError as err:  # (redis-py disconnected it)
            raise RedisConnectionError(f"Error writing to the socket: {err}") from err
        except AttributeError as err:
            if self._writer is not None:
                raise
            raise RedisConnectionError("Error writing to the socket: disconnected") from err


class OwnedCluster(RedisCluster):
    """redis-py's cluster client whose :meth:`aclose` closes every connection it opened.

    redis-py's own close misses two kinds:

    * a client whose last call failed on a lost connection is marked to learn its
      topology again, and its close then closes nothing at all;
    * when the topology is learnt again, a node that left it (a master killed and
      failed over) is only marked: its connections in use at that moment are closed
      when they are next released, which a call that failed on one never does.

    Either stayed open until the garbage collector found it.  This client remembers
    every node taken out of its tables, and its close disconnects those and every node
    still in them, whatever state the client is in.

    It also keeps one lost master from stopping the calls to the others:

    * redis-py calls its own close after a failed call (a pipeline's lost connection,
      ``CLUSTERDOWN``, ``MOVED``) only to learn the topology again; that close
      disconnected every connection to every node, those of calls under way on the
      healthy masters too (they failed, some with a plain ``RuntimeError`` from the
      closed transport).  Here it only marks the topology to be learnt again; the
      store's :meth:`close_all` closes;
    * learning the topology again asked the command table (``COMMAND``) of the first
      master listed, and failed, closing every connection, while that master was down:
      every call of every model failed until it came back.  The table does not change;
      it is asked once, of any master that answers.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._dropped: list[ClusterNode] = []
        self._shutting = False
        manager = self.nodes_manager  # (its tables are filled in place, never replaced)
        manager.nodes_cache = _NodeTable(manager.nodes_cache, self._dropped)
        manager.startup_nodes = _NodeTable(manager.startup_nodes, self._dropped)
        if self.connection_kwargs.get("connection_class") is Connection:  # (not TLS)
            self.connection_kwargs["connection_class"] = _Connection  # (the nodes' too)
            for node in manager.startup_nodes.values():
                node.connection_class = _Connection

    async def initialize(
        self,
        additional_startup_nodes_info: list[tuple[str, int]] | None = None,
        last_failed_node_name: str | None = None,
    ) -> RedisCluster:
        """Learn the topology (from any node that answers); the command table once."""
        if not self._initialize:
            return self
        if self._lock is None:
            self._lock = asyncio.Lock()
        async with self._lock:
            if self._initialize:
                manager = self.nodes_manager
                await manager.initialize(
                    additional_startup_nodes_info=additional_startup_nodes_info,
                    last_failed_node_name=last_failed_node_name,
                )
                if not self.commands_parser.commands:
                    await self._learn_commands()
                self._initialize = False
        return self

    async def _learn_commands(self) -> None:
        """The command table, from the default node or else the first master that answers
        (then the default node: keyless calls go to one that answers)."""
        manager = self.nodes_manager
        failure: BaseException | None = None
        for node in (manager.default_node, *manager.get_nodes_by_server_type(PRIMARY)):
            if node is None:
                continue
            try:
                await self.commands_parser.initialize(node)
            except (RedisConnectionError, RedisTimeoutError, OSError) as err:
                failure = err
                continue
            manager.default_node = node
            return
        raise failure or ClusterDownError("no master answers")

    async def aclose(self) -> None:
        """Mark the topology to be learnt again (redis-py's calls); :meth:`close_all` closes."""
        if not self._shutting:
            self._initialize = True
            return
        try:
            await super().aclose()
        finally:
            manager = self.nodes_manager
            nodes = {
                id(node): node
                for node in (
                    *manager.nodes_cache.values(), *manager.startup_nodes.values(),
                    *self._dropped,
                )
            }  # fmt: skip
            self._dropped.clear()
            await asyncio.gather(
                *(node.disconnect() for node in nodes.values()), return_exceptions=True
            )

    async def close_all(self) -> None:
        """Close every connection this client opened."""
        self._shutting = True
        await self.aclose()


def cluster_client(url: str, timeout_seconds: float) -> RedisCluster:
    """A cluster client on ``url`` with the store's timeouts.

    A call that meets a dead master retries twice with a short backoff, learning the
    topology again in between; a request's store budget bounds the whole.
    """
    return OwnedCluster.from_url(
        url,
        decode_responses=False,
        socket_timeout=timeout_seconds,
        socket_connect_timeout=timeout_seconds,
        # per node; past it a call fails at once (MaxConnectionsError: 503), it does not wait
        max_connections=512,
        retry=Retry(ExponentialBackoff(cap=0.2, base=0.02), 2),
        reinitialize_steps=1,  # learn the topology again at the first error, not the 5th
    )


def global_key(prefix: str, name: str, *, cluster: bool) -> str:
    """The key of global state ``name`` (``models``, ``epoch``)."""
    return f"{prefix}{{global}}:{name}" if cluster else prefix + name


async def migrate_global_keys(client: RedisCluster, prefix: str) -> bool:
    """Copy records and epoch kept under a single Redis's names to the tagged ones.

    Only when the tagged records are absent and the old ones present; the old keys stay
    (an older release never reads a cluster).  True when something was copied.
    """
    new_models = global_key(prefix, "models", cluster=True)
    if await client.exists(new_models):
        return False
    old = await client.hgetall(prefix + "models")
    if not old:
        return False
    for kind in ("epoch", "changes"):
        value = await client.get(prefix + kind)
        if value is not None:
            await client.set(global_key(prefix, kind, cluster=True), value, nx=True)
    for name, record in old.items():
        await client.hsetnx(new_models, name, record)
    return True


async def evalsha_each(
    client: RedisCluster, script: Any, calls: Sequence[tuple[list[str], list[Any]]]
) -> list[Any]:
    """Run ``script`` once per (keys, args), a pipeline per master, sent whole (``EVAL``,
    which loads it) to the masters that lack it.

    A call whose master failed has the error in its place (the calls on the other
    masters ran: one master lost fails only its own); when every call failed, the
    first error is raised.
    """
    groups: dict[str, list[int]] = {}
    for i, (keys, _) in enumerate(calls):
        node = client.get_node_from_key(keys[0])
        groups.setdefault(node.name if node is not None else "", []).append(i)
    replies: list[Any] = [None] * len(calls)
    answers = await asyncio.gather(
        *(_each_on_one(client, script, [calls[i] for i in group]) for group in groups.values()),
        return_exceptions=True,
    )
    for group, answer in zip(groups.values(), answers, strict=True):
        for j, i in enumerate(group):
            replies[i] = answer[j] if isinstance(answer, list) else answer
    errors = [reply for reply in replies if isinstance(reply, BaseException)]
    if errors and len(errors) == len(replies):
        raise errors[0]
    return replies


async def _each_on_one(
    client: RedisCluster, script: Any, calls: Sequence[tuple[list[str], list[Any]]]
) -> list[Any]:
    """:func:`evalsha_each` for the calls of one master."""
    for attempt in (0, 1):
        async with client.pipeline(transaction=False) as pipe:
            for keys, args in calls:  # (the pipeline's own evalsha is blocked in a cluster)
                if attempt:
                    pipe.execute_command("EVAL", script.script, len(keys), *keys, *args)
                else:
                    pipe.execute_command("EVALSHA", script.sha, len(keys), *keys, *args)
            try:
                return list(await pipe.execute())
            except NoScriptError:
                if attempt:
                    raise
    raise AssertionError("unreachable")


async def replicas_of_masters(client: RedisCluster) -> int:
    """The fewest replicas any master of the cluster has in sync now."""
    replies = await client.execute_command(
        "INFO", "replication", target_nodes=RedisCluster.PRIMARIES
    )
    counts = [int(info.get("connected_slaves", 0)) for info in replies.values()]
    return min(counts) if counts else 0


class SlotWires:
    """A kept-open connection per master; a call goes to the master of its key's slot.

    A redirection (``MOVED``, ``ASK``: a failover or a slot moving) makes the client
    learn the topology again and the call is sent once more (the script did not run).
    A lost connection is not retried (the call may have run): the caller answers 503,
    and the topology is learnt again before the next call.
    """

    def __init__(self, client: RedisCluster, timeout_seconds: float) -> None:
        self.client = client
        self.timeout_seconds = timeout_seconds
        self._wires: dict[str, WireConnection] = {}
        self._stale = False
        self._refreshing: asyncio.Lock | None = None

    def _wire(self, node: ClusterNode) -> WireConnection:
        wire = self._wires.get(node.name)
        if wire is None:
            kwargs = node.connection_kwargs
            wire = WireConnection(
                node.host, int(node.port), timeout_seconds=self.timeout_seconds,
                username=kwargs.get("username"), password=kwargs.get("password"),
            )  # fmt: skip
            self._wires[node.name] = wire
        return wire

    async def _refresh(self) -> None:
        if self._refreshing is None:
            self._refreshing = asyncio.Lock()
        async with self._refreshing:
            await self.client.nodes_manager.initialize()
            self._stale = False

    async def execute(self, key: str, *commands: tuple[Any, ...]) -> list[Any]:
        """``commands`` on one connection to the master of ``key``'s slot, replies in order."""
        if self._stale:
            await self._refresh()
        for attempt in (0, 1):
            node = self.client.get_node_from_key(key)
            if node is None:
                raise ClusterDownError(f"no master serves the slot of {key!r}")
            try:
                return await self._wire(node).execute(*commands)
            except ResponseError as err:
                if attempt or not str(err).startswith(_REDIRECTED):
                    raise
                await self._refresh()
            except (RedisConnectionError, RedisTimeoutError, OSError):
                self._stale = True
                raise
        raise AssertionError("unreachable")

    def close(self) -> None:
        for wire in self._wires.values():
            wire.close()
        self._wires.clear()
