"""The one-context predictions of one event-loop tick, decided together.

Requests that reach the event loop together already share one store commit (the
decision writes of a tick go out together); :class:`TickDecisions` makes them share
the decision too.  Each one-context predict of a model queues its context and waits;
a callback queued behind them decides every context queued in that tick in one
batched ``act_columns`` (one model pass, one draw), takes their event ids in one call,
writes the records in one pass, queues each request's write (the same store commit)
and hands each request its answer and the future of its write.  The request answers
once its own write is stored, so a decision is still stored before its answer.

The decisions are those of ``act`` called one by one: every draw is fixed by the
decision's event id (:func:`banditree.explore.event_uniforms`), and ``act_columns``
makes, row for row, the decisions of ``act`` on the same snapshot where the learner
says so (``batch_exact``: a single DGT, with or without named features).  A tick with
fewer than :data:`MIN_BATCH` requests, another learner (a forest's or TEL's batched
pass sums in another order; an apprentice's batch is ``act`` row by row anyway) or a
batch ``act_columns`` refuses is decided one request at a time with ``act``, so each
request gets its own decision or its own error.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, Protocol

from banditree import kernel
from banditree.core.codec import columns_public, decision_public
from banditree.learners import Decision, Learner
from service.domain.runtime.event_ids import new_event_ids
from service.domain.runtime.policy import Policy
from service.domain.runtime.replay import column_payloads, decision_payload
from service.store import Store

#: from this many requests in a tick, one ``act_columns`` decides them all (below it
#: the per-row ``act`` costs less than the batched pass's fixed cost).  Measured on the
#: default DGT (16 features, 10 actions), CPU us a request of ``act`` one by one against
#: one ``act_columns``: the compiled kernel 15.4 / 15.4 at 2 requests, 15.2 / 11.1 at 3,
#: 15.0 / 7.9 at 6; the numpy reference (``BANDITREE_KERNEL=reference``) 24.5 / 28.0 at
#: 4, 24.6 / 20.6 at 6
MIN_BATCH = 3 if kernel.ACTIVE == "native" else 6

#: what a request gets back: its public answer and the future of its decision's write
Answer = tuple[dict[str, Any], "asyncio.Future[None]"]
#: a queued request: its context, its caller's default action, where its answer goes
_Queued = tuple[Any, int | None, "asyncio.Future[Answer]"]


class Decided:
    """The decisions of a tick: one public answer and one stored payload per request, in
    order, and what the metrics count (explorations, reachable leaves)."""

    __slots__ = ("explored", "leaves", "payloads", "publics")

    def __init__(
        self, publics: list[Any], payloads: list[Any], explored: int, leaves: list[float]
    ) -> None:
        self.publics, self.payloads = publics, payloads
        self.explored, self.leaves = explored, leaves


def act_one(learner: Learner, context: Any, default: int | None, event_id: str) -> Decision:
    """``act`` for one context: the caller's default action played by an apprentice-mode
    learner, ignored by others."""
    apprentice = learner.apprentice
    if default is not None and apprentice is not None:
        return apprentice.act(context, event_id=event_id, default_action=default)
    return learner.act(context, event_id=event_id)


def decide_one(
    learner: Learner, uid: str, context: Any, default: int | None, event_id: str
) -> tuple[Decision, dict[str, Any], str]:
    """``act`` for one request: the decision, its public answer and its stored payload."""
    decision = act_one(learner, context, default, event_id)
    return decision, decision_public(decision), decision_payload(uid, decision)


def decide_batch(learner: Learner, uid: str, contexts: list[Any], event_ids: list[str]) -> Decided:
    """One ``act_columns`` for every context: the answers and payloads that ``act`` gives
    one by one (the caller's defaults are ignored: not an apprentice-mode learner)."""
    columns = learner.act_columns(contexts, event_ids)
    leaves = (columns.extras or {}).get("reachable_leaves") or []
    return Decided(
        columns_public(columns), column_payloads(uid, columns), sum(columns.explored), leaves
    )


class Runtime(Protocol):
    """What a tick's decisions read of the model's runtime (:class:`~service.domain.runtime.ModelRuntime`)."""

    name: str
    uid: str
    store: Store
    policy: Policy

    @property
    def learner(self) -> Learner: ...

    def count_decided(self, explored: int, leaves: list[float]) -> None: ...


class TickDecisions:
    """The queued one-context predictions of one model (:meth:`ModelRuntime.predict_in_tick`)."""

    def __init__(self, runtime: Runtime) -> None:
        self.runtime = runtime
        self._queue: list[_Queued] = []

    def add(self, context: Any, default: int | None) -> asyncio.Future[Answer]:
        """Queue one request's context: its answer comes with those of the same tick."""
        loop = asyncio.get_running_loop()
        answer: asyncio.Future[Answer] = loop.create_future()
        self._queue.append((context, default, answer))
        if len(self._queue) == 1:
            loop.call_soon(self._decide)
        return answer

    def _decide(self) -> None:
        """Decide every request queued in this tick, queue their writes, hand out answers."""
        queue, self._queue = self._queue, []
        queue = [item for item in queue if not item[2].done()]  # a request that gave up
        if not queue:
            return
        runtime = self.runtime
        learner, ids = runtime.learner, new_event_ids(len(queue))
        decided = None
        if len(queue) >= MIN_BATCH and learner.batch_exact:
            try:
                decided = decide_batch(learner, runtime.uid, [c for c, _, _ in queue], ids)
            except Exception:  # decided one by one: each its own error
                decided = None
        if decided is None:
            decided = self._one_by_one(learner, queue, ids)
        store, now, ttl = runtime.store, time.time(), runtime.policy.event_ttl_seconds
        for (_, _, answer), public, event_id, payload in zip(
            queue, decided.publics, ids, decided.payloads, strict=True
        ):
            if isinstance(public, BaseException):
                answer.set_exception(public)
                continue
            try:
                stored = store.queue_events(
                    runtime.name, [(event_id, payload)], now=now, ttl_seconds=ttl
                )
            except Exception as err:  # the request's own error, as before
                answer.set_exception(err)
                continue
            answer.set_result((public, stored))
        runtime.count_decided(decided.explored, decided.leaves)

    def _one_by_one(self, learner: Learner, queue: list[_Queued], ids: list[str]) -> Decided:
        """:func:`decide_one` per request; a request's error takes its answer's place."""
        publics: list[Any] = []
        payloads: list[Any] = []
        explored = 0
        leaves: list[float] = []
        uid = self.runtime.uid
        for (context, default, _), event_id in zip(queue, ids, strict=True):
            try:
                decision, public, payload = decide_one(learner, uid, context, default, event_id)
            except Exception as err:  # handed to its own request
                publics.append(err)
                payloads.append(None)
                continue
            publics.append(public)
            payloads.append(payload)
            explored += decision.explored
            if "reachable_leaves" in decision.extras:
                leaves.append(decision.extras["reachable_leaves"])
        return Decided(publics, payloads, explored, leaves)
