"""Personalizer's model and log operations on a banditree model.

* model export: the served model as a banditree checkpoint (safetensors tensors and
  JSON metadata with a checksum; never pickle);
* model import: such a checkpoint, of a model with the same config, served at once as
  the newest checkpoint (an operator write: the learner restarts from it and learns the
  feedback logged after the served snapshot again, as after a rollback);
* model reset: a fresh model of the same config and explorer, from the end of the log
  (nothing logged before is learned again);
* log properties: the times of the oldest and newest log entries held;
* log deletion: a checkpoint of everything logged, then the log trimmed up to it (the
  model keeps what it learned; the older checkpoints go too, as they need that log).
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from banditree.learners import LearnerConfig, build_learner
from banditree.persistence import CorruptCheckpoint, dumps, loads
from banditree.ranking import RankingModel
from service.domain.errors import InvalidRequest, Unavailable
from service.domain.personalizer.configuration import ranking_model
from service.domain.personalizer.times import iso_time
from service.domain.runtime import ModelRuntime
from service.domain.runtime.replay import entry_row
from service.store import CheckpointInfo, LogEntry, StoreUnavailable

#: log entries read from the store per round trip
PAGE_ENTRIES = 1_000


async def export_model(runtime: ModelRuntime) -> bytes:
    """The served model's checkpoint bytes."""
    ranking_model(runtime.learner, runtime.name)
    return await asyncio.to_thread(dumps, runtime.learner)


async def import_model(runtime: ModelRuntime, blob: bytes) -> CheckpointInfo:
    """Serve ``blob`` (an exported model of the same config) as the newest checkpoint."""
    served = ranking_model(runtime.learner, runtime.name)
    try:
        learner = await asyncio.to_thread(loads, blob)
    except CorruptCheckpoint as err:
        raise InvalidRequest(f"body: not a banditree model export ({err})", "body") from None
    if not isinstance(learner, RankingModel):
        raise InvalidRequest(f"body: the export holds a {learner.task} model", "body")
    theirs, ours = learner.config(), served.config()
    differ = sorted(k for k in set(theirs) | set(ours) if theirs.get(k) != ours.get(k))
    if differ:
        raise InvalidRequest(
            f"body: the exported model's config differs from this model's in {', '.join(differ)}: "
            "import it into a model created with the same config",
            "body",
        )
    return await _serve(runtime, blob, learner.version, runtime.served.offset)


async def reset_model(runtime: ModelRuntime) -> CheckpointInfo:
    """Serve a fresh model (same config and explorer) from the end of the log."""
    served = ranking_model(runtime.learner, runtime.name)

    def fresh() -> bytes:
        model = build_learner(LearnerConfig.from_stored(served.config()))
        assert isinstance(model, RankingModel)
        model.set_explorer(*served.explorer_settings)
        if served.apprentice_created:
            model.set_mode(served.mode)
        return dumps(model)

    blob = await asyncio.to_thread(fresh)
    try:
        last = (await runtime.store.log_bounds(runtime.name)).last
    except StoreUnavailable as err:
        raise Unavailable(f"the reset was not saved: {err}") from None
    return await _serve(runtime, blob, 0, max(last, runtime.log_last))


async def _serve(runtime: ModelRuntime, blob: bytes, version: int, offset: int) -> CheckpointInfo:
    """Save ``blob`` as the newest checkpoint with the operator token and serve it."""
    try:
        saved = await runtime.store.save_checkpoint(
            runtime.name, version=version, blob=blob, keep=runtime.policy.checkpoint_keep,
            now=time.time(), offset=offset, acked_at=0.0, token=-1,
        )  # fmt: skip
        await runtime.served.refresh()
    except StoreUnavailable as err:
        raise Unavailable(f"the model was not saved: {err}") from None
    if runtime.wake_learner is not None:
        runtime.wake_learner()
    return saved


def model_properties(runtime: ModelRuntime, record_json: str | None) -> dict[str, Any]:
    """``creationTime`` (the model's) and ``lastModifiedTime`` (the served snapshot's)."""
    created = float(json.loads(record_json).get("created_at", 0.0)) if record_json else 0.0
    published = runtime.served.published_at or created
    return {"creationTime": iso_time(created), "lastModifiedTime": iso_time(published)}


async def log_properties(runtime: ModelRuntime) -> dict[str, Any]:
    """``dateRange``: when the oldest and the newest log entry held were acknowledged."""
    try:
        bounds = await runtime.store.log_bounds(runtime.name)
        first: list[LogEntry] = []
        last: list[LogEntry] = []
        if bounds.length:
            first = await runtime.store.read_log(runtime.name, after=bounds.first - 1, limit=1)
            last = await runtime.store.read_log(runtime.name, after=bounds.last - 1, limit=1)
    except StoreUnavailable as err:
        raise Unavailable(f"the log cannot be read now: {err}") from None
    if not first or not last:
        return {"dateRange": {"from": None, "to": None}}
    return {"dateRange": {"from": iso_time(first[0].acked_at), "to": iso_time(last[0].acked_at)}}


async def delete_log(runtime: ModelRuntime) -> None:
    """Checkpoint everything logged, then trim the log (and older checkpoints) up to it."""
    info = await runtime.checkpoint()
    try:
        blob = await runtime.store.load_checkpoint(runtime.name, info.sequence)
        if blob is None:
            raise Unavailable("the checkpoint just written is gone; try again")
        await runtime.store.save_checkpoint(
            runtime.name, version=info.version, blob=blob, keep=1, now=time.time(),
            offset=info.offset, acked_at=0.0, token=-1,
        )  # fmt: skip
        await runtime.served.refresh()
    except StoreUnavailable as err:
        raise Unavailable(f"the log was not deleted: {err}") from None
    if runtime.wake_learner is not None:
        runtime.wake_learner()


async def log_rows(
    runtime: ModelRuntime, *, start: float, end: float, limit: int
) -> list[dict[str, Any]]:
    """The model's learnable log rows acknowledged in ``[start, end]`` (the newest
    ``limit``), oldest first, in the wire form of ``GET /v1/models/{name}/log``."""
    rows: list[dict[str, Any]] = []
    async for row in _rows(runtime, start, end):
        rows.append(row)
        if len(rows) > 2 * limit:
            del rows[:-limit]
    return rows[-limit:]


async def _rows(runtime: ModelRuntime, start: float, end: float) -> AsyncIterator[dict[str, Any]]:
    after = 0
    while True:
        try:
            entries = await runtime.store.read_log(runtime.name, after=after, limit=PAGE_ENTRIES)
        except StoreUnavailable as err:
            raise Unavailable(f"the log cannot be read now: {err}") from None
        for entry in entries:
            if start <= entry.acked_at <= end:
                row = entry_row(entry, runtime.uid, runtime.policy.default_loss)
                if row is not None:
                    yield row
        if len(entries) < PAGE_ENTRIES:
            return
        after = entries[-1].offset
