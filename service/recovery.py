"""Writing back what a store lost: model records, counters and served snapshots.

A Redis without persistence that restarts comes back empty, while every process still
serves its models from memory.  :func:`recover` runs in each process once it sees a new
store epoch (see :mod:`service.store.base`): for every model it serves or learns, it
holds the model again with the log offset, checkpoint sequence, fencing token and
decision count it knows, so offsets, sequences and tokens never go back (the learner
and the replicas keep working); it offers the snapshot it serves as the checkpoint to
restart from (the one with the highest sequence wins, saved at the log offset the model was
held at, so feedback acknowledged after the loss is learned on top of it); and it
writes the model's record back unless one is there.  What was acknowledged but neither
in a served snapshot nor in the log after it is lost with the data.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

from banditree.persistence import dumps
from service.store import HeldCounters, OfferedSnapshot, Store

if TYPE_CHECKING:
    from service.runtime import ModelLearner, ModelRuntime

log = logging.getLogger("banditree.service")


def known_counters(runtime: ModelRuntime | None, learner: ModelLearner | None) -> HeldCounters:
    """The highest log offset, sequence, token and decision count this process has seen."""
    log_last = sequence = token = decisions = 0
    if runtime is not None:
        served = runtime.served
        log_last = max(runtime.log_last, served.offset)
        sequence, token, decisions = served.sequence, served.token, runtime.decisions_total
    if learner is not None:
        log_last = max(log_last, learner.offset)
        token = max(token, learner.token or 0)
    return HeldCounters(log_last=log_last, sequence=sequence, token=token, decisions=decisions)


async def _offer(runtime: ModelRuntime | None) -> OfferedSnapshot | None:
    if runtime is None or runtime.served.sequence == 0:
        return None
    learner = runtime.learner
    blob = await asyncio.to_thread(dumps, learner)
    return OfferedSnapshot(
        sequence=runtime.served.sequence, version=learner.version, blob=blob,
        keep=runtime.policy.checkpoint_keep,
    )  # fmt: skip


async def recover(
    store: Store,
    runtimes: Mapping[str, ModelRuntime],
    learners: Mapping[str, ModelLearner],
    records: Mapping[str, str],
    *,
    epoch: str,
    was: str | None,
    serves: bool,
    poll_seconds: float,
) -> None:
    """Write back every model of this process to a store that lost its data (now ``epoch``).

    ``runtimes``, ``learners`` and ``records`` are what the process serves, learns and
    knows of each model (read only); ``was`` is the epoch the models were held in.  The
    caller records the new epoch once this returns.
    """
    if not serves:
        # a learner-only process has no snapshot to offer: let serving processes (which
        # do) hold the models first, so their snapshots are what learning restarts from
        await asyncio.sleep(2 * poll_seconds)
    names = sorted(set(runtimes) | set(learners))
    log.error(
        "the store lost its data (epoch %s, was %s): writing back %d models",
        epoch, was, len(names),
    )  # fmt: skip
    for name in names:
        runtime, learner = runtimes.get(name), learners.get(name)
        known = known_counters(runtime, learner)
        held = await store.hold_model(
            name, known=known, offer=await _offer(runtime), now=time.time()
        )
        record = records.get(name)
        if record is not None:
            await store.save_model(name, record, replace=False)
        log.warning(
            "model %s written back (%s; log offsets go on after %d)",
            name, "held again" if held else "already held again", known.log_last,
        )  # fmt: skip
