"""The operations predict, feedback and rank: what both the fast front and the routes run.

:func:`decide`, :func:`give_feedback` and :func:`rank_answer` take the app's state (any
object with ``settings`` and ``registry``: :class:`ServiceState`), the model's name and
a checked body, and return the answer's content as plain data; the caller encodes it
(``orjson``) and sends it.  A refusal is a :class:`~service.domain.errors.DomainError`,
which :mod:`service.http.errors` alone turns into a status and an error body.  The fast
front (:mod:`service.edge.serve`) and the FastAPI routes (:mod:`service.http.routes`)
call the same functions, so a body answers the same on either path.

Apprentice mode is checked here too (:func:`apprentice_predict`: the caller's default
actions, refused with :class:`~service.domain.errors.InvalidRequest` before anything is
decided), and which models a key reaches (:func:`visible`), shared by the key check of
the front and the model list of the routes.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Awaitable, Callable
from typing import Any, Protocol, TypeVar

from orjson import Fragment

from banditree.core import Decision, Feedback
from banditree.core.codec import columns_public, decision_public
from banditree.learners.base import Learner
from banditree.learners.reward import feedback_from_reward
from service.domain.errors import BatchTooLarge, InvalidRequest
from service.domain.registry import ModelRegistry
from service.domain.runtime import ModelRuntime
from service.domain.runtime.given_ids import predict_given
from service.domain.runtime.ranking import played_id, rank
from service.domain.schemas import (
    FeedbackBody,
    FeedbackCreate,
    PredictBody,
    PredictCreate,
    RankBody,
)
from service.settings import Settings

__all__ = [
    "ROLES_STATE_KEY",
    "SCOPE_STATE_KEY",
    "ServiceState",
    "StateView",
    "apprentice_predict",
    "decide",
    "decide_context",
    "give_feedback",
    "rank_answer",
    "ranking_list",
    "visible",
]


class ServiceState(Protocol):
    """What the operations read of the app's state."""

    @property
    def settings(self) -> Settings: ...

    @property
    def registry(self) -> ModelRegistry: ...


_MISSING = object()


class StateView:
    """The ``settings`` and ``registry`` of an app's ``state``, read from its dictionary.

    What the fast front hands the operations.  Starlette's ``State`` keeps its values
    in a dictionary behind ``__getattr__``, which Python calls only after its own lookup
    failed and formatted an ``AttributeError``: two of those a request on the hot paths.
    A value not set yet is read from the state itself (the same ``AttributeError``)."""

    __slots__ = ("_state", "_values")

    def __init__(self, state: Any) -> None:
        self._state = state
        self._values: dict[str, Any] = state._state

    @property
    def settings(self) -> Settings:
        """The state's ``settings``."""
        found = self._values.get("settings", _MISSING)
        return self._state.settings if found is _MISSING else found

    @property
    def registry(self) -> ModelRegistry:
        """The state's ``registry``."""
        found = self._values.get("registry", _MISSING)
        return self._state.registry if found is _MISSING else found


def _explanations(learner: Learner, body: PredictCreate | PredictBody) -> list[list[str]]:
    """Each context's leaf path as named conditions (models with features, single trees)."""
    explainer = learner.explainer
    if explainer is None:
        raise InvalidRequest("explain needs a model whose contexts are named features", "explain")
    contexts = [body.context] if body.context is not None else list(body.contexts or [])
    return [explainer.explain(_named(c)) for c in contexts]


def _named(context: Any) -> dict[str, Any]:
    if not isinstance(context, dict):
        raise InvalidRequest("must be an object of named features", "context")
    return context


async def decide(
    state: ServiceState, name: str, body: PredictCreate | PredictBody
) -> dict[str, Any]:
    """The content of a predict's answer: one decision, or ``{"decisions": [...]}``."""
    settings, registry = state.settings, state.registry
    runtime = registry.loaded(name) or await registry.get(name)
    if body.contexts is not None and len(body.contexts) > settings.max_batch:
        raise BatchTooLarge(
            f"contexts holds {len(body.contexts)} items, more than max_batch={settings.max_batch}",
            "contexts",
        )
    defaults = body.defaults()  # checked, and played, only where the model takes them
    content: dict[str, Any]
    # explained before deciding, with no await between: the same snapshot decides
    explained = _explanations(runtime.learner, body) if body.explain else None
    # a boosted model's explanation is its online tree's path: which, and the blend
    shown = runtime.learner.blend_state() if explained is not None else None
    given = body.given_event_ids()
    if given is not None:  # the caller's ids: a repeat gets the decisions stored before

        async def under_given(
            contexts: list[Any], defaults: list[int] | None
        ) -> tuple[list[dict[str, Any]], bool]:
            return await predict_given(
                runtime, contexts, given, defaults, single=body.context is not None
            )

        contexts = [body.context] if body.context is not None else list(body.contexts or [])
        rows, logged = await apprentice_predict(runtime, contexts, defaults, under_given)
        content = rows[0] if body.context is not None else {"decisions": rows}
    elif explained is not None and body.context is not None:
        decisions, logged = await apprentice_predict(
            runtime, [body.context], defaults, runtime.predict
        )
        content = decision_public(decisions[0])
    elif body.context is not None and defaults is None:  # with the others of this tick
        _no_default_needed(runtime)  # as apprentice_predict, one coroutine fewer
        content, logged = await runtime.predict_in_tick([body.context], None)
    elif body.context is not None:
        content, logged = await apprentice_predict(
            runtime, [body.context], defaults, runtime.predict_in_tick
        )
    else:  # a batch: its decisions held column by column
        columns, logged = await apprentice_predict(
            runtime, body.contexts or [], defaults, runtime.predict_columns
        )
        written = columns.public_json if explained is None else None
        # the answer is written by orjson, which takes the kernel's JSON as it stands
        content = {"decisions": columns_public(columns) if written is None else Fragment(written)}
    if explained is not None:
        for row, why in zip(content.get("decisions", [content]), explained, strict=True):
            row["explanation"] = why
            if shown is not None:
                row["explained_by"] = shown
    if not logged:  # the store is away: answered from memory, feedback cannot be taken
        content["logged"] = False
    return content


async def decide_context(state: ServiceState, name: str, context: list[float]) -> Any:
    """:func:`decide` of a body that is one context and nothing else (no default action,
    event id or explanation: what the kernel's ``parse_row`` reads), without its body
    object and branches: the same checks, answer and stored decision."""
    registry = state.registry
    runtime = registry.loaded(name) or await registry.get(name)
    _no_default_needed(runtime)
    content, logged = await runtime.predict_in_tick([context], None)
    if not logged:  # the store is away: answered from memory, feedback cannot be taken
        content["logged"] = False
    return content


async def give_feedback(
    state: ServiceState, name: str, body: FeedbackCreate | FeedbackBody
) -> None:
    """Log the feedback of a predict (checked against its pending decision)."""
    runtime = state.registry.loaded(name) or await state.registry.get(name)
    if body.losses is not None:
        fb, field = Feedback(losses=(body.losses[0], body.losses[1])), "losses"
    elif body.reward is not None:
        fb, field = feedback_from_reward(body.reward, runtime.learner.task), "reward"
    else:
        fb, field = Feedback(loss=body.loss), "loss"
    await runtime.feedback(body.event_id, fb, field=field)


def ranking_list(decision: Decision) -> list[dict[str, Any]]:
    """``[{id, probability}]``: the played candidate first, then by probability, then the
    excluded ones (probability 0)."""
    ranking = decision.ranking
    assert ranking is not None and decision.action is not None
    ids, probabilities, chosen = ranking["ids"], ranking["probabilities"], decision.action
    # by probability, ties in index order (a stable sort, reversed, keeps that order)
    order = sorted(range(len(ids)), key=probabilities.__getitem__, reverse=True)
    order.remove(chosen)
    order.insert(0, chosen)
    out = [{"id": ids[i], "probability": probabilities[i]} for i in order]
    out += [{"id": a, "probability": 0.0} for a in ranking.get("excluded", [])]
    return out


async def rank_answer(state: ServiceState, name: str, body: RankBody) -> dict[str, Any]:
    """The content of a rank's answer: the event id, the played id and the ranking."""
    runtime = state.registry.loaded(name) or await state.registry.get(name)
    decision, logged = await rank(
        runtime, body.context, body.actions, excluded=body.excluded_actions,
        event_id=body.event_id, defer=body.defer_activation,
    )  # fmt: skip
    content: dict[str, Any] = {
        "event_id": decision.event_id,
        "model_version": decision.model_version,
        "reward_action_id": played_id(decision),
        "ranking": ranking_list(decision),
    }
    if not logged:
        content["logged"] = False
    return content


T = TypeVar("T")


def _no_default_needed(runtime: ModelRuntime) -> None:
    """Refuse a predict without the caller's default action on an apprentice-mode model."""
    apprentice = runtime.learner.apprentice
    if apprentice is not None and apprentice.mode == "apprentice":
        raise InvalidRequest(
            "this model is in apprentice mode: send the caller's default_action",
            "default_action",
        )


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
    if defaults is None:
        _no_default_needed(runtime)
        return await predict(contexts, None)
    learner = runtime.learner
    field = "default_action" if len(defaults) == 1 else "default_actions"
    n_actions = learner.n_actions
    for i, action in enumerate(defaults):
        if n_actions and not 0 <= action < n_actions:
            where = field if field == "default_action" else f"{field}[{i}]"
            raise InvalidRequest(f"{where} must be in [0, {n_actions - 1}], got {action}", field)
    return await predict(contexts, defaults)


#: the ASGI scope's ``state`` key holding the model patterns of a key limited to models
SCOPE_STATE_KEY = "banditree_models"
#: the ASGI scope's ``state`` key holding the roles of the request's key (``GET /v1/whoami``)
ROLES_STATE_KEY = "banditree_roles"


def visible(patterns: tuple[str, ...] | None, name: str) -> bool:
    """Whether a key limited to ``patterns`` (None: every model) reaches model ``name``.

    Patterns are exact names or ``fnmatch`` patterns (``shop-*``), matched case-sensitively.
    """
    return patterns is None or any(fnmatch.fnmatchcase(name, p) for p in patterns)
