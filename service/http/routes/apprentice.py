"""``PATCH /v1/models/{name}``: switch an apprentice-mode model to online, or back.

Decisions with the caller's default are :mod:`service.domain.operations`.
"""

from __future__ import annotations

from fastapi import APIRouter

from banditree.learners import Learner
from banditree.learners.apprentice import apprentice_model
from service.domain.schemas import ModelPublic, ModelUpdate
from service.http.deps import RuntimeDep
from service.http.errors import ServiceError
from service.http.routes.models import model_public

router = APIRouter(prefix="/v1/models", tags=["models"])


@router.patch("/{name}")
async def update_model(body: ModelUpdate, runtime: RuntimeDep) -> ModelPublic:
    """Switch an apprentice-mode model to ``online`` (or back); what it learned is kept.

    The switch is saved as the newest checkpoint at once (the learner restarts from it and
    relearns any feedback logged after it), so every process and a restart keep the mode.
    """
    learner = apprentice_model(runtime.learner)
    if learner is None:
        if body.mode == "online":
            return model_public(runtime)
        raise ServiceError(
            409, "this model was created in online mode; create it with mode apprentice", "mode"
        )
    if learner.mode != body.mode:
        mode = body.mode
        await runtime.replace(lambda copy: _set_mode(copy, mode))
    return model_public(runtime)


def _set_mode(copy: Learner, mode: str) -> None:
    """Switch the mode of ``copy``, a copy of a model created in apprentice mode."""
    model = apprentice_model(copy)
    assert model is not None, "a copy of an apprentice-mode model is one too"
    model.set_mode(mode)
