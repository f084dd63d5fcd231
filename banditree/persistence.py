"""Versioned checkpoint format: safetensors tensors + JSON metadata + checksum.

A checkpoint is one safetensors byte string.  Its header metadata holds
``banditree.meta`` (JSON: learner config, version, counters, optimizer and
standardiser state, RNG state) and ``banditree.sha256`` over the tensors and the
metadata.  Nothing is ever unpickled; a checkpoint whose checksum does not match is
refused whole.

The header also holds ``banditree.summary`` (JSON: version, counters, and for a model
created in apprentice mode its mode and agreement figures), read by
:func:`read_summary` from the header alone: a model's public figures without
restoring it (the service's model list).  It is derived from the learner and not
covered by the checksum; nothing is restored from it.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
from safetensors.numpy import load as st_load
from safetensors.numpy import save as st_save

import banditree.ranking  # noqa: F401  (registers the ranking task: its checkpoints load too)
from banditree.core.digest import tensor_digest
from banditree.learners import Learner, restore_learner
from banditree.learners.apprentice import apprentice_model

__all__ = [
    "FORMAT",
    "CorruptCheckpoint",
    "dump_state",
    "dumps",
    "load_state",
    "loads",
    "read_summary",
    "summary",
    "tensor_digest",
]

FORMAT = "banditree.checkpoint/v1"


class CorruptCheckpoint(ValueError):
    """A checkpoint that cannot be trusted (bad bytes, wrong format, checksum mismatch)."""


#: the longest safetensors header :func:`read_summary` reads (its JSON, in bytes)
MAX_HEADER_BYTES = 100_000_000


def dump_state(
    tensors: dict[str, np.ndarray], meta: dict[str, Any], summary: dict[str, Any] | None = None
) -> bytes:
    meta_json = json.dumps({"format": FORMAT, **meta}, sort_keys=True)
    header = {"banditree.meta": meta_json, "banditree.sha256": tensor_digest(tensors, meta_json)}
    if summary is not None:
        header["banditree.summary"] = json.dumps(summary, sort_keys=True, allow_nan=False)
    return st_save({k: np.ascontiguousarray(v) for k, v in tensors.items()}, metadata=header)


def load_state(blob: bytes) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """Tensors and metadata from :func:`dump_state` bytes; raises :class:`CorruptCheckpoint`."""
    try:
        tensors = st_load(blob)
        n = int.from_bytes(blob[:8], "little")
        header = json.loads(blob[8 : 8 + n])
        info = header.get("__metadata__") or {}
        meta_json = info["banditree.meta"]
        checksum = info["banditree.sha256"]
        meta = json.loads(meta_json)
    except Exception as err:  # any parse failure means the bytes are not a checkpoint
        raise CorruptCheckpoint(f"unreadable checkpoint: {err}") from None
    if meta.get("format") != FORMAT:
        raise CorruptCheckpoint(f"unknown checkpoint format {meta.get('format')!r}")
    if tensor_digest(tensors, meta_json) != checksum:
        raise CorruptCheckpoint("checksum mismatch: the checkpoint is damaged")
    return tensors, meta


def dumps(learner: Learner) -> bytes:
    """Checkpoint bytes for a learner (with its :func:`summary` in the header)."""
    tensors, meta = learner.state()
    return dump_state(tensors, meta, summary(learner))


def _finite(value: float | int | None) -> float | int | None:
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return None
    return value


def summary(learner: Learner) -> dict[str, Any]:
    """What a model's public view takes from its learner: ``version``, ``counters``
    (non-finite ones as None) and, for a model created in apprentice mode,
    ``apprentice`` (``mode`` and ``agreement``), else None."""
    apprenticed = apprentice_model(learner)
    return {
        "version": int(learner.version),
        "counters": {k: _finite(float(v)) for k, v in learner.counters.items()},
        "apprentice": None
        if apprenticed is None
        else {
            "mode": apprenticed.mode,
            "agreement": {k: _finite(v) for k, v in apprenticed.agreement().items()},
        },
    }


def read_summary(blob: bytes) -> dict[str, Any] | None:
    """The :func:`summary` a checkpoint's header holds, read without its tensors; None
    when it holds none (written by an older release) or the header cannot be read."""
    try:
        n = int.from_bytes(blob[:8], "little")
        if not 0 < n <= min(MAX_HEADER_BYTES, len(blob) - 8):
            return None
        info = json.loads(blob[8 : 8 + n]).get("__metadata__") or {}
        found = json.loads(info["banditree.summary"])
    except (KeyError, TypeError, ValueError, AttributeError):
        return None
    if not (
        isinstance(found, dict)
        and isinstance(found.get("version"), int)
        and isinstance(found.get("counters"), dict)
        and isinstance(found.get("apprentice"), dict | None)
    ):
        return None
    return found


def loads(blob: bytes) -> Learner:
    """A learner restored from :func:`dumps` bytes."""
    tensors, meta = load_state(blob)
    try:
        return restore_learner(tensors, meta)
    except (KeyError, TypeError, ValueError) as err:
        raise CorruptCheckpoint(f"checkpoint does not restore: {err}") from None
