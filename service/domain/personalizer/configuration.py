"""Personalizer's service configuration and policy <-> a ranking model's settings.

The service configuration reads the model's event policy (``rewardWaitTime`` is
``event_ttl_seconds``, ``defaultReward`` is ``1 - default_loss``, ``modelExportFrequency``
is ``checkpoint_every_seconds``), its explorer (``explorationPercentage``: the epsilon of
an epsilon-greedy explorer, null for the others) and its mode (``learningMode``).  An
update applies what banditree can change on a live model (the exploration percentage,
which makes the explorer epsilon-greedy, and the mode) and refuses every other change
with a 400 naming the field and why; a field sent back as read is not a change.  The
policy is the explorer as VW arguments (:mod:`banditree.ranking.vw_policy`).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Any

from banditree.learners import Learner
from banditree.ranking import RankingModel
from banditree.ranking.vw_policy import ExplorerSettings, parse_policy_arguments, policy_arguments
from service.domain.errors import InvalidRequest
from service.domain.personalizer.times import iso_duration, parse_duration
from service.domain.runtime import ModelRuntime

#: what each field that cannot change on a banditree model is, and what to do instead
FIXED = {
    "rewardWaitTime": "the wait of a model's events is event_ttl_seconds, set when the model "
    "is created (PUT /v1/models/{name}); a live model's cannot change",
    "defaultReward": "the default reward is 1 - default_loss, set when the model is created "
    "(PUT /v1/models/{name}); a live model's cannot change",
    "modelExportFrequency": "banditree publishes a model every checkpoint_every_seconds, set "
    "when the model is created (or BANDITREE_CHECKPOINT_EVERY_SECONDS)",
    "rewardAggregation": "banditree learns the first reward of an event and refuses a second "
    "(Personalizer's 'earliest'); add rewards up before sending one",
    "logRetentionDays": "banditree keeps the log back to its oldest kept checkpoint "
    "(checkpoint_keep), not for a number of days; DELETE /logs trims it",
    "modelRetrainDays": "banditree never retrains a model from its log on a schedule",
    "isAutoOptimizationEnabled": "banditree runs no evaluation on its own: create one "
    "(PUT /evaluations/{id}) and apply it (POST /configurations/applyFromEvaluation)",
    "autoOptimizationFrequency": "banditree runs no evaluation on its own",
    "autoOptimizationStartDate": "banditree runs no evaluation on its own",
    "logMirrorEnabled": "banditree does not mirror its log to Azure storage; export it with "
    "GET /v1/models/{name}/log",
    "logMirrorSasUri": "banditree does not mirror its log to Azure storage",
}
#: fields answered for the caller's information; an update may send them back, unapplied
READ_ONLY = frozenset({"lastConfigurationEditDate", "latestApprenticeModeMetrics"})
MODES = {"online": "Online", "apprentice": "Apprentice"}


def ranking_model(learner: Learner, name: str) -> RankingModel:
    """The learner as a ranking model; 400 when the model is not one."""
    if not isinstance(learner, RankingModel):
        raise InvalidRequest(
            f"model {name!r} is a {learner.task} model: Personalizer's API serves ranking "
            'models ({"task": "ranking"})'
        )
    return learner


def _settings(model: RankingModel) -> ExplorerSettings:
    return ExplorerSettings(*model.explorer_settings)


def exploration_percentage(settings: ExplorerSettings) -> float | None:
    """The epsilon of an epsilon-greedy explorer with a fixed epsilon, in percent; else None."""
    if settings.explorer == "epsilon_greedy" and not settings.exponent:
        return 100.0 * (0.3 if settings.parameter is None else settings.parameter)
    return None


def service_configuration(runtime: ModelRuntime) -> dict[str, Any]:
    """Personalizer's service configuration of the model."""
    model = ranking_model(runtime.learner, runtime.name)
    policy = runtime.policy
    loss = policy.default_loss
    return {
        "rewardWaitTime": iso_duration(policy.event_ttl_seconds),
        "defaultReward": None if loss is None else 1.0 - loss,
        "rewardAggregation": "earliest",
        "explorationPercentage": exploration_percentage(_settings(model)),
        "modelExportFrequency": iso_duration(policy.checkpoint_every_seconds),
        "logRetentionDays": None,
        "modelRetrainDays": 0,
        "learningMode": MODES[model.mode],
        "isAutoOptimizationEnabled": False,
        "logMirrorEnabled": False,
    }


def _same(field: str, sent: Any, current: Any) -> bool:
    if field in ("rewardWaitTime", "modelExportFrequency"):
        return math.isclose(parse_duration(sent, field), parse_duration(current, field))
    if isinstance(current, str) and isinstance(sent, str):
        return sent.lower() == current.lower()
    if isinstance(current, bool) or isinstance(sent, bool) or sent is None or current is None:
        return sent is current or (sent is None and current in (None, False))
    if isinstance(sent, int | float) and isinstance(current, int | float):
        return math.isclose(float(sent), float(current), abs_tol=1e-9)
    return bool(sent == current)


def configuration_change(runtime: ModelRuntime, body: Any) -> Callable[[Learner], None] | None:
    """What an update asks of the model, checked whole before anything changes: a change
    to apply to a copy of the learner (None: nothing changes).  400 naming the first
    field that is unknown, has a bad value or cannot change."""
    if not isinstance(body, dict):
        raise InvalidRequest("body: the service configuration must be a JSON object", "body")
    current = service_configuration(runtime)
    model = ranking_model(runtime.learner, runtime.name)
    explorer: ExplorerSettings | None = None
    mode: str | None = None
    for field, sent in body.items():
        if field in READ_ONLY:
            continue
        if field not in FIXED and field not in current:
            raise InvalidRequest(f"{field}: not a field of the service configuration", field)
        if field in current and _same(field, sent, current[field]):
            continue
        if field == "explorationPercentage":
            explorer = _exploration(sent)
        elif field == "learningMode":
            mode = _mode(model, sent)
        else:
            shown = json.dumps(sent)
            raise InvalidRequest(f"{field}: {shown} cannot be applied: {FIXED[field]}", field)
    if explorer is None and mode is None:
        return None
    if explorer is not None:
        check_explorer(model, explorer, "explorationPercentage")

    def change(learner: Learner) -> None:
        assert isinstance(learner, RankingModel)
        if explorer is not None:
            learner.set_explorer(explorer.explorer, explorer.parameter, explorer.exponent)
        if mode is not None:
            learner.set_mode(mode)

    return change


def _exploration(sent: Any) -> ExplorerSettings:
    ok = isinstance(sent, int | float) and not isinstance(sent, bool) and 0 <= sent <= 100
    if not ok:
        raise InvalidRequest(
            f"explorationPercentage: a number in [0, 100] is required, got {sent!r}",
            "explorationPercentage",
        )
    return ExplorerSettings("epsilon_greedy", float(sent) / 100.0)


def _mode(model: RankingModel, sent: Any) -> str:
    wanted = {v.lower(): k for k, v in MODES.items()}.get(str(sent).lower())
    if wanted is None:
        raise InvalidRequest(
            f"learningMode: {json.dumps(sent)} cannot be applied: banditree has Online and Apprentice "
            "(no LoggingOnly: a model that only logs is one nobody ranks with)",
            "learningMode",
        )
    if wanted == "apprentice" and not model.apprentice_created:
        raise InvalidRequest(
            "learningMode: Apprentice cannot be applied: this model was created online; "
            "create one with mode apprentice (PUT /v1/models/{name})",
            "learningMode",
        )
    return wanted


def check_explorer(model: RankingModel, settings: ExplorerSettings, field: str) -> None:
    """400 naming ``field`` when the model's config refuses ``settings`` (checked before
    the change is written, so a refusal changes nothing)."""
    try:
        model.check_explorer(settings.explorer, settings.parameter, settings.exponent)
    except ValueError as err:
        reason = str(err).splitlines()[0] if str(err) else type(err).__name__
        raise InvalidRequest(f"{field}: {reason}", field) from None


def policy_body(model: RankingModel) -> dict[str, str]:
    """Personalizer's policy of the model: its explorer as VW arguments."""
    settings = _settings(model)
    return {"name": f"banditree {settings.explorer}", "arguments": policy_arguments(settings)}


def policy_settings(body: Any) -> ExplorerSettings:
    """The explorer a policy update asks for; 400 naming the argument that cannot apply."""
    if not isinstance(body, dict):
        raise InvalidRequest("body: the policy must be a JSON object", "body")
    unknown = sorted(set(body) - {"name", "arguments"})
    if unknown:
        raise InvalidRequest(f"{unknown[0]}: not a field of the policy", unknown[0])
    arguments = body.get("arguments")
    if not isinstance(arguments, str):
        raise InvalidRequest("arguments: VW arguments (a string) are required", "arguments")
    try:
        return parse_policy_arguments(arguments)
    except ValueError as err:
        raise InvalidRequest(str(err), "arguments") from None


def created_settings(model: RankingModel) -> ExplorerSettings:
    """The explorer the model was created with (what a policy reset goes back to)."""
    config = model.config()
    return ExplorerSettings(
        config["explorer"], config["explorer_parameter"], config["explorer_exponent"]
    )
