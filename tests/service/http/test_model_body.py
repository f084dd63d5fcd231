"""``PUT /v1/models/{name}``'s body composes the learner config and the policy, flat."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from banditree.learners import LearnerConfig
from service.domain.schemas import ModelCreate, ModelPolicy


def test_the_body_composes_rather_than_inherits() -> None:
    assert not issubclass(ModelCreate, LearnerConfig)
    fields = ModelCreate.model_fields
    assert set(LearnerConfig.model_fields) | set(ModelPolicy.model_fields) < set(fields)
    for name, field in LearnerConfig.model_fields.items():
        assert fields[name].description == field.description or name == "options"
        assert fields[name].metadata == field.metadata or name == "options"


def _errors(model: Any, body: dict[str, Any]) -> list[tuple[Any, ...]]:
    with pytest.raises(ValidationError) as caught:
        model.model_validate(body)
    return [(e["loc"], e["msg"]) for e in caught.value.errors()]


@pytest.mark.parametrize(
    "body",
    [
        {"n_features": 3},
        {"n_features": 0, "n_actions": 2},
        {"n_features": 3, "n_actions": 2, "estimator": "one_point"},
        {"task": "regression", "n_features": 3, "loss_matrix": [[0.0]]},
        {"n_features": 3, "n_actions": 2, "loss_max": 1.0},
    ],
)
def test_the_body_refuses_what_the_config_refuses(body: dict[str, Any]) -> None:
    assert _errors(ModelCreate, body) == _errors(LearnerConfig, body)


def test_split_gives_the_config_with_the_fields_set() -> None:
    body = ModelCreate.model_validate(
        {"task": "regression", "n_features": 3, "checkpoint_every_updates": 10}
    )
    config, policy = body.split()
    assert config.model_fields_set == {"task", "n_features"}
    assert config.for_initial_model().kind == "dgt"  # an unnamed kind stays unnamed
    assert policy.checkpoint_every_updates == 10
    assert config == LearnerConfig(task="regression", n_features=3)


def test_a_body_with_features_derives_n_features_and_refuses_a_contradiction() -> None:
    body = {"n_actions": 3, "features": {"age": "numeric", "country": "categorical"}}
    config, _ = ModelCreate.model_validate(body).split()
    assert config.n_features == 2 + 34 and config.feature_schema is not None
    assert [f["name"] for f in config.features["features"]] == ["age", "country"]  # type: ignore[index]
    errors = _errors(ModelCreate, {**body, "n_features": 4})
    assert any("encode to 36 columns" in msg for _, msg in errors)
    errors = _errors(ModelCreate, {"n_actions": 3, "features": {"age": "number"}})
    assert errors  # an unknown type is refused
