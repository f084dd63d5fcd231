"""A model's public figures as plain data: of a loaded runtime, or read from the store.

The model list (``GET /v1/models``) shows every model, loaded or not.  A model not
loaded is not restored for it: its figures come from its record (config, policy), the
header of its newest checkpoint (version, counters, apprentice figures:
:func:`banditree.persistence.read_summary`, no tensor read) and its log bounds
(decisions of every process, acknowledged feedback not yet in a checkpoint).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from banditree.learners.apprentice import apprentice_model
from service.domain.runtime.api import ModelRuntime
from service.domain.runtime.policy import Policy


@dataclass(frozen=True)
class ModelGlance:
    """What a model's public view shows.

    ``counters`` are the learner's (``decisions`` those of every process, as last
    seen; a value None when not finite); ``published_at`` is when the served
    checkpoint was written (0: none); ``pending_decisions`` and ``lease_holder`` are as
    of the last gauge refresh (None: not read, always for a model not loaded);
    ``apprentice`` holds ``mode`` and ``agreement`` for a model created in apprentice
    mode, else None.
    """

    name: str
    config: dict[str, Any]
    policy: Policy
    version: int
    counters: dict[str, float | None]
    pending_updates: int
    published_at: float
    pending_decisions: int | None = None
    lease_holder: str | None = None
    apprentice: dict[str, Any] | None = None


def glance(runtime: ModelRuntime) -> ModelGlance:
    """The figures of a loaded model."""
    learner = runtime.learner
    apprenticed = apprentice_model(learner)
    return ModelGlance(
        name=runtime.name,
        config=learner.config(),
        policy=runtime.policy,
        version=learner.version,
        counters=dict(runtime.counters),
        pending_updates=runtime.pending_updates,
        published_at=runtime.served.published_at,
        pending_decisions=runtime.pending_decisions,
        lease_holder=runtime.lease_holder,
        apprentice=None
        if apprenticed is None
        else {"mode": apprenticed.mode, "agreement": apprenticed.agreement()},
    )
