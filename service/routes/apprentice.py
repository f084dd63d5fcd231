"""Apprentice mode in the service: decisions with the caller's default, the mode switch."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from fastapi import APIRouter

from banditree.learners import Apprentice
from banditree.learners.apprentice import apprentice_model
from service.deps import RuntimeDep
from service.errors import ServiceError
from service.routes.models import model_public
from service.runtime import ModelRuntime
from service.schemas import ModelPublic, ModelUpdate

router = APIRouter(prefix="/v1/models", tags=["models"])
T = TypeVar("T")


async def apprentice_predict(
    runtime: ModelRuntime,
    contexts: list[Any],
    defaults: list[int] | None,
    predict: Callable[[list[Any], list[int] | None], Awaitable[tuple[T, bool]]],
) -> tuple[T, bool]:
    """``predict(contexts, defaults)``, the caller's defaults checked first (so a refusal
    changes nothing); ``predict`` is the runtime's ``predict`` or ``predict_columns``.

    An apprentice-mode model plays the defaults; an online model ignores them.
    """
    learner = runtime.learner
    apprenticed = isinstance(learner, Apprentice) and learner.mode == "apprentice"
    if defaults is None:
        if apprenticed:
            raise ServiceError(
                422, "this model is in apprentice mode: send the caller's default_action",
                "default_action",
            )  # fmt: skip
        return await predict(contexts, None)
    field = "default_action" if len(defaults) == 1 else "default_actions"
    n_actions = learner.n_actions
    for i, action in enumerate(defaults):
        if n_actions and not 0 <= action < n_actions:
            where = field if field == "default_action" else f"{field}[{i}]"
            raise ServiceError(422, f"{where} must be in [0, {n_actions - 1}], got {action}", field)
    return await predict(contexts, defaults)


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
        await runtime.replace(lambda copy: copy.set_mode(mode))  # type: ignore[attr-defined]
    return model_public(runtime)
