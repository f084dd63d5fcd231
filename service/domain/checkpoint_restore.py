"""Loading a checkpoint back: the newest one that restores, skipping corrupt ones."""

from __future__ import annotations

import logging
from typing import Any

from banditree.learners import Learner
from banditree.persistence import CorruptCheckpoint, loads
from service.store import CheckpointInfo, CheckpointStore

log = logging.getLogger("banditree.service")


async def newest_valid_checkpoint(
    store: CheckpointStore,
    name: str,
    candidates: list[CheckpointInfo],
    *,
    expected_config: dict[str, Any],
    corrupt_total: Any,
) -> tuple[Learner, CheckpointInfo] | None:
    """The first of ``candidates`` (newest first) that restores with ``expected_config``.

    Parameters
    ----------
    store, name
        Where the checkpoints of model ``name`` live.
    candidates
        Checkpoint infos to try, newest first.
    expected_config
        The learner config (JSON form) of the model record; a checkpoint of another
        config counts as corrupt.
    corrupt_total
        The model's ``banditree_checkpoint_corrupt_total`` child, counted per skip.

    Returns
    -------
    tuple or None
        The restored learner and its checkpoint info, or None when none restores.
    """
    for info in candidates:
        blob = await store.load_checkpoint(name, info.sequence)
        try:
            learner = loads(blob or b"")
            if learner.config() != expected_config:
                raise CorruptCheckpoint("its config differs from the model record")
        except CorruptCheckpoint as err:
            corrupt_total.inc()
            log.error(
                "skipping corrupt checkpoint %d (version %d) of model %s: %s",
                info.sequence, info.version, name, err,
            )  # fmt: skip
            continue
        return learner, info
    return None
