"""Apprentice mode in the domain: decisions with the caller's default actions.

Called by the predict operation (:func:`service.http.routes.decisions.decide`, which
the fast front runs too); a refusal is :class:`~service.domain.errors.InvalidRequest`
(422, naming the field), raised before anything is decided.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from banditree.learners import Apprentice
from service.domain.errors import InvalidRequest
from service.domain.runtime import ModelRuntime

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
            raise InvalidRequest(
                "this model is in apprentice mode: send the caller's default_action",
                "default_action",
            )
        return await predict(contexts, None)
    field = "default_action" if len(defaults) == 1 else "default_actions"
    n_actions = learner.n_actions
    for i, action in enumerate(defaults):
        if n_actions and not 0 <= action < n_actions:
            where = field if field == "default_action" else f"{field}[{i}]"
            raise InvalidRequest(f"{where} must be in [0, {n_actions - 1}], got {action}", field)
    return await predict(contexts, defaults)
