"""Personalizer's service configuration and times mapped onto a ranking model (no server)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest

from banditree.learners import LearnerConfig, build_learner
from banditree.ranking import RankingModel
from banditree.ranking.vw_policy import ExplorerSettings
from service.domain.errors import InvalidRequest
from service.domain.personalizer.configuration import (
    check_explorer,
    configuration_change,
    service_configuration,
)
from service.domain.personalizer.times import iso_duration, parse_duration, parse_time
from service.domain.runtime.policy import Policy


def _runtime(**config: Any) -> Any:
    learner = build_learner(LearnerConfig.model_validate({"task": "ranking", **config}))
    policy = Policy(
        checkpoint_every_updates=100, checkpoint_every_seconds=5.0, event_ttl_seconds=600.0,
        default_loss=1.0, checkpoint_keep=3,
    )  # fmt: skip
    return SimpleNamespace(name="menu", learner=learner, policy=policy)


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(600.0, "PT10M"), (5.0, "PT5S"), (0.5, "PT0.5S"), (86400.0, "P1D"), (90061.0, "P1DT1H1M1S"),
     (0.0, "PT0S")],
)  # fmt: skip
def test_durations_round_trip(seconds: float, text: str) -> None:
    assert iso_duration(seconds) == text
    assert parse_duration(text, "f") == pytest.approx(seconds)


@pytest.mark.parametrize("text", ["P", "PT", "10 minutes", "P1Y", "-PT5S", 600])
def test_a_bad_duration_names_the_field(text: object) -> None:
    with pytest.raises(InvalidRequest, match=r"^rewardWaitTime: an ISO 8601 duration"):
        parse_duration(text, "rewardWaitTime")


def test_times_read_with_or_without_a_zone() -> None:
    assert parse_time("1970-01-01T00:01:00Z", "t") == 60.0
    assert parse_time("1970-01-01T00:01:00", "t") == 60.0  # no zone: UTC
    with pytest.raises(InvalidRequest, match=r"^startTime: 'soon' is not an ISO 8601 time"):
        parse_time("soon", "startTime")


def test_the_configuration_reads_the_model() -> None:
    config = service_configuration(_runtime())
    assert config["rewardWaitTime"] == "PT10M" and config["defaultReward"] == 0.0
    assert config["modelExportFrequency"] == "PT5S" and config["rewardAggregation"] == "earliest"
    assert config["explorationPercentage"] is None  # fastcb: no fixed percentage
    eps = service_configuration(_runtime(explorer="epsilon_greedy", explorer_parameter=0.05))
    assert eps["explorationPercentage"] == pytest.approx(5.0)


def test_sent_back_as_read_changes_nothing() -> None:
    runtime = _runtime()
    config = service_configuration(runtime)
    assert configuration_change(runtime, config) is None
    assert configuration_change(runtime, {**config, "rewardWaitTime": "PT600S"}) is None
    assert configuration_change(runtime, {**config, "lastConfigurationEditDate": "x"}) is None


def test_the_exploration_percentage_applies() -> None:
    runtime = _runtime()
    change = configuration_change(runtime, {"explorationPercentage": 12.5})
    assert change is not None
    learner = runtime.learner
    assert isinstance(learner, RankingModel)
    change(learner)
    assert learner.explorer_settings == ("epsilon_greedy", 0.125, None)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"rewardWaitTime": "PT1H"}, 'rewardWaitTime: "PT1H" cannot be applied'),
        ({"defaultReward": 0.5}, "defaultReward: 0.5 cannot be applied"),
        ({"rewardAggregation": "sum"}, 'rewardAggregation: "sum" cannot be applied'),
        ({"logRetentionDays": 30}, "logRetentionDays: 30 cannot be applied"),
        ({"isAutoOptimizationEnabled": True}, "isAutoOptimizationEnabled: true cannot be applied"),
        ({"logMirrorSasUri": "https://x"}, 'logMirrorSasUri: "https://x" cannot be applied'),
        ({"learningMode": "LoggingOnly"}, 'learningMode: "LoggingOnly" cannot be applied'),
        ({"learningMode": "Apprentice"}, "this model was created online"),
        ({"explorationPercentage": 150}, "explorationPercentage: a number in [0, 100]"),
        ({"explorationPercentage": True}, "explorationPercentage: a number in [0, 100]"),
        ({"colour": "blue"}, "colour: not a field of the service configuration"),
        ([1, 2], "body: the service configuration must be a JSON object"),
    ],
)
def test_what_cannot_apply_is_refused_naming_the_field(body: Any, message: str) -> None:
    runtime = _runtime()
    with pytest.raises(InvalidRequest) as refused:
        configuration_change(runtime, body)
    assert message in refused.value.detail


def test_a_refusal_changes_nothing_even_after_an_applicable_field() -> None:
    runtime = _runtime()
    with pytest.raises(InvalidRequest, match="rewardWaitTime"):
        configuration_change(runtime, {"explorationPercentage": 10, "rewardWaitTime": "PT1H"})
    assert runtime.learner.explorer_settings == ("fastcb", None, None)


def test_an_explorer_the_config_refuses_is_a_400_before_any_change() -> None:
    runtime = _runtime()
    model = runtime.learner
    assert isinstance(model, RankingModel)
    with pytest.raises(InvalidRequest, match=r"^arguments: .*epsilon"):
        check_explorer(model, ExplorerSettings("epsilon_greedy", 3.0), "arguments")
    with pytest.raises(InvalidRequest, match=r"^arguments: .*temperature must be > 0"):
        check_explorer(model, ExplorerSettings("softmax", 0.0), "arguments")
    check_explorer(model, ExplorerSettings("squarecb", 20.0, 0.5), "arguments")
    assert model.explorer_settings == ("fastcb", None, None)
