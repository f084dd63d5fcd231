"""A model's initial checkpoint swapped in is reported to the heap freezer; later ones not.

Right after thousands of creates every model's initial checkpoint replaces the learner
built at its creation; each swap frees about as many tracked objects as it makes, so
the new learners piled up young until one collection walked 17,000-31,000 of them on
the event loop (predict stalls of 106-120 ms).  See :mod:`service.domain.runtime.snapshot`.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from banditree.persistence import dumps
from service.domain.registry.lifecycle import build_learner
from service.domain.runtime.snapshot import ServedSnapshot
from service.domain.schemas import ModelCreate
from service.store import CheckpointInfo
from service.telemetry.metrics import ServiceMetrics

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


class _Checkpoints:
    """The two store calls a refresh makes, over a list of checkpoints of one blob."""

    def __init__(self, blob: bytes) -> None:
        self.blob, self.infos = blob, list[CheckpointInfo]()

    async def list_checkpoints(self, name: str, limit: int | None = None) -> list[CheckpointInfo]:
        newest = sorted(self.infos, key=lambda info: -info.sequence)
        return newest if limit is None else newest[:limit]

    async def load_checkpoint(self, name: str, sequence: int) -> bytes:
        return self.blob


async def test_only_the_initial_checkpoint_swapped_in_is_reported() -> None:
    body = {"kind": "linear", "n_features": 4, "n_actions": 3}
    config, _ = ModelCreate.model_validate(body).split()
    learner = build_learner(config)
    blob = dumps(learner)
    store = _Checkpoints(blob)
    runtime = SimpleNamespace(name="m", store=store, metrics=ServiceMetrics().for_model("m"))
    reported: list[int] = []
    served = ServedSnapshot(runtime, learner, None, lambda: reported.append(served.sequence))

    def saved(sequence: int, offset: int) -> CheckpointInfo:
        return CheckpointInfo(sequence, learner.version, 1.0, len(blob), offset=offset)

    store.infos.append(saved(1, 0))  # published when a learner first leads the model
    assert await served.refresh()
    assert reported == [1]
    assert not await served.refresh()  # nothing newer: no swap, no report
    store.infos.append(saved(2, 40))  # learned from feedback: not reported
    assert await served.refresh()
    assert served.sequence == 2 and reported == [1]
