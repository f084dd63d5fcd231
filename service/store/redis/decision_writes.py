"""The decision writes of the Redis store: every predict's pending decisions, batched.

A predict is answered only once its decisions are in Redis, so this write is on every
answer.  :class:`DecisionWrites` queues the decisions of concurrent predictions and
sends them together: one transaction per model (``MULTI``, a ``SET ... PX`` per decision,
one ``ZADD`` of every deadline to the model's ``due`` set, one ``HINCRBY`` of its
decision count, ``EXEC``: less Redis CPU than the same writes in a Lua script, see
``docs/decisions/0002-redis-wire.md``), all transactions of a batch in one socket write on the store's
:class:`~service.store.redis.wire.WireConnection`, at most :data:`MAX_IN_FLIGHT`
batches in flight at a time (unless the queue holds a full batch: what is queued while
they travel goes as the next one, so under load a batch holds many requests).  Queueing, sending and handing out
the replies are plain callbacks: a batch costs no task and no coroutine.

A caller waits on a future that gets ``None`` once its decisions are stored, or
:class:`~service.store.base.StoreUnavailable` (Redis away, a timeout, an error reply).
Without a wire connection (TLS, a unix socket) the pooled client sends the transactions.
"""

from __future__ import annotations

import asyncio
import itertools
from collections.abc import Callable
from typing import Any

import hiredis
from redis.asyncio.client import Redis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import RedisError, ResponseError

from service.store.base import StoreUnavailable
from service.store.redis.wire import REDIS_FAILURES, WireConnection, store_error

#: queued decisions that go to Redis at once, even while other batches are in flight
FULL_BATCH = 256
#: batches in flight at a time (more when the queue holds a full batch): a second batch
#: travels while the first is answered, so Redis and the event loop work side by side
MAX_IN_FLIGHT = 2

#: one request's decisions of one model: deadline, expire_ms, values, event ids, and
#: whether they add to the decision count (not when rewritten in place: an activation)
_Group = tuple[str, int, list[str], list[str], bool]
#: one transaction: its commands, and the waiters of the requests whose decisions it holds
_Call = tuple[list[tuple[Any, ...]], list[asyncio.Future[None]]]


def _closing() -> StoreUnavailable:
    """The error of a write the closing store will not send (or not see answered)."""
    return StoreUnavailable("redis: the store is closing")


def _settle(calls: list[_Call], errors: list[BaseException | None]) -> None:
    for (_, waiters), error in zip(calls, errors, strict=True):
        for done in waiters:
            if done.done():  # its request gave up waiting
                continue
            if error is None:
                done.set_result(None)
            else:
                done.set_exception(error)


class DecisionWrites:
    """A queue of decision writes, sent to Redis a batch at a time."""

    def __init__(
        self,
        client: Redis | RedisCluster,
        key: Callable[..., str],
        wire: WireConnection | None,
    ) -> None:
        self.client, self.key, self.wire = client, key, wire
        self._queue: list[tuple[str, _Group, asyncio.Future[None]]] = []
        self._queued = 0  # decisions in self._queue
        self._in_flight = 0  # batches sent and not answered
        self._tasks: set[asyncio.Task[None]] = set()  # connecting, or the pooled client
        self._closed = False

    def put(
        self,
        name: str,
        deadline: str,
        expire_ms: int,
        values: list[str],
        event_ids: list[str],
        *,
        counted: bool = True,
    ) -> asyncio.Future[None]:
        """Queue one request's decisions; the future is done once they are stored."""
        loop = asyncio.get_running_loop()
        done: asyncio.Future[None] = loop.create_future()
        self._queue.append((name, (deadline, expire_ms, values, event_ids, counted), done))
        self._queued += len(event_ids)
        if len(self._queue) == 1 and self._in_flight < MAX_IN_FLIGHT:
            loop.call_soon(self._send)
        elif self._queued >= FULL_BATCH:  # worth a round trip of its own now
            loop.call_soon(self._send, True)
        return done

    def _send(self, full: bool = False) -> None:
        if self._closed:
            self._fail_queue()
            return
        busy = self._in_flight >= MAX_IN_FLIGHT
        if not self._queue or (busy and not (full and self._queued >= FULL_BATCH)):
            return
        batch, self._queue, self._queued = self._queue, [], 0
        calls = self._calls(batch)
        self._in_flight += 1
        if self.wire is not None and self.wire.connected:
            self._submit(calls)
        else:
            task = asyncio.ensure_future(self._send_later(calls))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    def _calls(self, batch: list[tuple[str, _Group, asyncio.Future[None]]]) -> list[_Call]:
        """One transaction per model, split at FULL_BATCH decisions (a long one blocks Redis)."""
        grouped: list[tuple[str, list[_Group], list[asyncio.Future[None]]]] = []
        filling: dict[str, tuple[list[_Group], list[asyncio.Future[None]], int]] = {}
        for name, group, done in batch:
            groups, waiters, size = filling.pop(name, ([], [], 0))
            if not groups:
                grouped.append((name, groups, waiters))
            groups.append(group)
            waiters.append(done)
            size += len(group[3])
            if size < FULL_BATCH:
                filling[name] = (groups, waiters, size)
        return [(self._transaction(name, groups), waiters) for name, groups, waiters in grouped]

    def _transaction(self, name: str, groups: list[_Group]) -> list[tuple[Any, ...]]:
        """The commands that store ``groups`` of decisions of model ``name``, atomically."""
        ev = self.key("ev", name) + ":"
        commands: list[tuple[Any, ...]] = [("MULTI",)]
        due: list[str] = []
        count = 0
        for deadline, expire_ms, values, event_ids, counted in groups:
            for event_id, value in zip(event_ids, values, strict=True):
                commands.append(("SET", ev + event_id, value, "PX", expire_ms))
                due += (deadline, event_id)
            count += len(event_ids) if counted else 0
        commands.append(("ZADD", self.key("due", name), *due))
        if count:
            commands.append(("HINCRBY", self.key("ctr", name), "decisions", count))
        commands.append(("EXEC",))
        return commands

    def _submit(self, calls: list[_Call]) -> None:
        """Write every transaction at once; settle each by its ``EXEC`` reply."""
        assert self.wire is not None
        packed = b"".join(
            hiredis.pack_command(command) for commands, _ in calls for command in commands
        )
        ends = list(itertools.accumulate(len(commands) for commands, _ in calls))

        def replied(replies: list[Any] | None, error: BaseException | None) -> None:
            if replies is None:
                self._done(calls, [store_error(error or RedisError("no reply"))] * len(calls))
            else:
                self._done(calls, [_error(replies[end - 1]) for end in ends])

        self.wire.submit(packed, ends[-1], replied)

    async def _send_later(self, calls: list[_Call]) -> None:
        """The cold path: open the wire connection first, or send through the pool."""
        try:
            if self.wire is not None:
                await self.wire.connect()
                self._submit(calls)
                return
            results = await asyncio.gather(
                *(self._pooled(commands) for commands, _ in calls), return_exceptions=True
            )
            self._done(calls, [_failure(result) for result in results])
        except REDIS_FAILURES as err:
            self._done(calls, [store_error(err)] * len(calls))
        except BaseException:  # cancelled (the store closing): no waiter waits forever
            self._done(calls, [_closing()] * len(calls))
            raise

    async def _pooled(self, commands: list[tuple[Any, ...]]) -> None:
        async with self.client.pipeline(transaction=True) as pipe:
            for command in commands[1:-1]:  # the pipeline adds MULTI and EXEC
                pipe.execute_command(*command)
            await pipe.execute()

    def _done(self, calls: list[_Call], errors: list[BaseException | None]) -> None:
        _settle(calls, errors)
        self._in_flight -= 1
        self._send()  # what was queued while that batch travelled

    async def close(self) -> None:
        """Fail what is queued and in flight (their waiters get StoreUnavailable)."""
        self._closed = True
        tasks, self._tasks = set(self._tasks), set()
        for task in tasks:
            task.cancel()
        if tasks:
            await asyncio.wait(tasks, timeout=1.0)
        if self.wire is not None:
            self.wire.close()  # what is in flight fails
        self._fail_queue()

    def _fail_queue(self) -> None:
        queue, self._queue, self._queued = self._queue, [], 0
        _settle([([], [done for _, _, done in queue])], [_closing()])


def _error(exec_reply: Any) -> BaseException | None:
    """None for a transaction that ran whole, else the store's error."""
    if isinstance(exec_reply, hiredis.ReplyError):  # EXECABORT: nothing was run
        return store_error(ResponseError(str(exec_reply)))
    if not isinstance(exec_reply, list):
        return store_error(ResponseError(f"unexpected EXEC reply {exec_reply!r}"))
    for reply in exec_reply:
        if isinstance(reply, hiredis.ReplyError):
            return store_error(ResponseError(str(reply)))
    return None


def _failure(result: Any) -> BaseException | None:
    if isinstance(result, REDIS_FAILURES):
        return store_error(result)
    return result if isinstance(result, BaseException) else None
