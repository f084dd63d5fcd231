"""The ``banditree train`` model file (moved to :mod:`banditree.models.dgt.trained`)."""

from banditree.models.dgt.trained import (
    FORMAT,
    MAX_FILE_BYTES,
    InvalidModelFile,
    TrainedTree,
    base64_length,
)

__all__ = ["FORMAT", "MAX_FILE_BYTES", "InvalidModelFile", "TrainedTree", "base64_length"]
