"""Writing back what a store lost: model records, counters and served snapshots.

A Redis without persistence that restarts comes back empty, while every process still
serves its models from memory.  :func:`write_back` runs in each process once its
registry sees a new store epoch (see :mod:`service.store.base`): for every model it
serves or learns, it holds the model again with the log offset, checkpoint sequence,
fencing token and decision count it knows, so offsets, sequences and tokens never go
back (the learner and the replicas keep working); it offers the snapshot it serves as
the checkpoint to restart from (the one with the highest sequence wins, saved at the
log offset the model was held at, so feedback acknowledged after the loss is learned on
top of it); and it writes the model's record back unless one is there.  What was
acknowledged but neither in a served snapshot nor in the log after it is lost with the
data.  The registry owns its models and the epoch they are held in; it hands this
module what to write back and records the new epoch itself.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from banditree.persistence import dumps
from service.store import HeldCounters, OfferedSnapshot, RecordStore

if TYPE_CHECKING:
    from service.domain.runtime import ModelLearner, ModelRuntime

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


@dataclass(frozen=True)
class HeldModel:
    """A model this process serves (``runtime``) or learns (``learner``), with its record."""

    name: str
    runtime: ModelRuntime | None
    learner: ModelLearner | None
    record: str | None


async def write_back(store: RecordStore, models: Sequence[HeldModel]) -> None:
    """Write back ``models`` to a store that lost its data.

    The caller (the registry) decides when: it owns its models and the epoch they are
    held in, and this module reads only what it is given.
    """
    for model in models:
        known = known_counters(model.runtime, model.learner)
        held = await store.hold_model(
            model.name, known=known, offer=await _offer(model.runtime), now=time.time()
        )
        if model.record is not None:
            await store.save_model(model.name, model.record, replace=False)
        log.warning(
            "model %s written back (%s; log offsets go on after %d)",
            model.name, "held again" if held else "already held again", known.log_last,
        )  # fmt: skip
