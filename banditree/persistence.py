"""Versioned checkpoint format: safetensors tensors + JSON metadata + checksum.

A checkpoint is one safetensors byte string.  Its header metadata holds
``banditree.meta`` (JSON: learner config, version, counters, optimizer and
standardiser state, RNG state) and ``banditree.sha256`` over the tensors and the
metadata.  Nothing is ever unpickled; a checkpoint whose checksum does not match is
refused whole.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from safetensors.numpy import load as st_load
from safetensors.numpy import save as st_save

import banditree.ranking  # noqa: F401  (registers the ranking task: its checkpoints load too)
from banditree.core.digest import tensor_digest
from banditree.learners import Learner, restore_learner

__all__ = [
    "FORMAT",
    "CorruptCheckpoint",
    "dump_state",
    "dumps",
    "load_state",
    "loads",
    "tensor_digest",
]

FORMAT = "banditree.checkpoint/v1"


class CorruptCheckpoint(ValueError):
    """A checkpoint that cannot be trusted (bad bytes, wrong format, checksum mismatch)."""


def dump_state(tensors: dict[str, np.ndarray], meta: dict[str, Any]) -> bytes:
    meta_json = json.dumps({"format": FORMAT, **meta}, sort_keys=True)
    header = {"banditree.meta": meta_json, "banditree.sha256": tensor_digest(tensors, meta_json)}
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
    """Checkpoint bytes for a learner."""
    tensors, meta = learner.state()
    return dump_state(tensors, meta)


def loads(blob: bytes) -> Learner:
    """A learner restored from :func:`dumps` bytes."""
    tensors, meta = load_state(blob)
    try:
        return restore_learner(tensors, meta)
    except (KeyError, TypeError, ValueError) as err:
        raise CorruptCheckpoint(f"checkpoint does not restore: {err}") from None
