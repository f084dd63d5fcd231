"""The checksum of named arrays and their metadata (checkpoints and model files)."""

from __future__ import annotations

import hashlib

import numpy as np


def tensor_digest(tensors: dict[str, np.ndarray], meta_json: str) -> str:
    """The sha256 of named arrays (name, dtype, shape, bytes, in name order) and the metadata."""
    h = hashlib.sha256()
    for name in sorted(tensors):
        arr = np.ascontiguousarray(tensors[name])
        h.update(name.encode())
        h.update(str(arr.dtype).encode())
        h.update(repr(arr.shape).encode())
        h.update(arr.tobytes())
    h.update(meta_json.encode())
    return h.hexdigest()
