"""Data sources for the simulator (moved to :mod:`banditree.datasets.sources`)."""

from banditree.datasets.sources import (
    AUTO_MAX_CLASSES,
    SKLEARN_SETS,
    TEST_FRACTION,
    TaskChoice,
    from_arrays,
    infer_task,
    known_names,
    load_source,
)

__all__ = [
    "AUTO_MAX_CLASSES",
    "SKLEARN_SETS",
    "TEST_FRACTION",
    "TaskChoice",
    "from_arrays",
    "infer_task",
    "known_names",
    "load_source",
]
