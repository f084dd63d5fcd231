"""The learner configuration in sections: one field, one place, everywhere at once."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import ValidationError

from banditree.learners import LearnerConfig, build_learner
from banditree.learners.config import SECTIONS
from banditree.learners.config.options import flag, option_parameters

#: A stored config as a version before ``bagging`` and ``learning_rate_decay`` wrote it
#: (every field of its version, null for a default, in the old flat order).
STORED_BEFORE_SECTIONS: dict[str, Any] = {
    "task": "regression",
    "kind": "dgt_forest",
    "n_features": 8,
    "n_actions": None,
    "height": None,
    "hidden": [],
    "shared_bias": True,
    "linear_term": None,
    "linear_learning_rate": None,
    "linear_update": None,
    "ridge_l2": 10.0,
    "ridge_mix_rate": 10.0,
    "context_clip": None,
    "n_trees": 4,
    "aggregate": "vote",
    "explorer": "fastcb",
    "explorer_parameter": None,
    "explorer_exponent": None,
    "reward_link": "identity",
    "estimator": "two_point",
    "delta": 0.5,
    "regression_loss": "squared",
    "huber_delta": 1.0,
    "loss_matrix": None,
    "max_importance_weight": 1.0,
    "importance_aware": False,
    "learning_rate": None,
    "accumulate": 4,
    "l1": 0.0,
    "l2": 0.0,
    "standardize": True,
    "loss_min": None,
    "loss_max": None,
    "target_offset": 1.0,
    "target_scale": 28.0,
    "seed": 3,
    "options": {},
    "mode": "online",
}


def test_every_field_sits_in_exactly_one_section() -> None:
    seen = [name for section in SECTIONS.values() for name in section.model_fields]
    assert len(seen) == len(set(seen))
    assert set(seen) == set(LearnerConfig.model_fields)
    # the model section first: kind's and n_trees' defaults read task (and kind) before them
    assert list(LearnerConfig.model_fields)[:3] == ["task", "kind", "n_features"]


def test_every_field_is_described() -> None:
    undescribed = [n for n, f in LearnerConfig.model_fields.items() if not f.description]
    assert undescribed == []


def test_a_section_reads_back_its_fields() -> None:
    config = LearnerConfig(n_features=3, n_actions=2, explorer="softmax")
    assert config.section("exploration") == {
        "explorer": "softmax",
        "explorer_parameter": None,
        "explorer_exponent": None,
        "reward_link": "identity",
    }


def test_a_config_stored_before_the_sections_loads_and_keeps_its_behaviour() -> None:
    config = LearnerConfig.from_stored(STORED_BEFORE_SECTIONS)
    assert config.bagging is True and config.resolved_bagging
    assert config.resolved_learning_rate_decay is None  # its constant step
    assert (config.n_trees, config.resolved_height, config.seed) == (4, 8, 3)
    again = LearnerConfig.from_stored(config.to_dict())
    assert again == config
    assert set(config.to_dict()) == set(LearnerConfig.model_fields)


def test_stored_form_builds_the_same_decisions() -> None:
    config = LearnerConfig(n_features=4, n_actions=3, seed=5)
    first = build_learner(config)
    second = build_learner(LearnerConfig.from_stored(config.to_dict()))
    for i in range(20):
        context = [i % 3, 0.5 * i, -1.0, 2.0 - i]
        a, b = first.act(context, f"e{i}"), second.act(context, f"e{i}")
        assert (a.action, a.propensity) == (b.action, b.propensity)


def test_an_option_for_every_field_but_the_excluded() -> None:
    names = [p.name for p in option_parameters(exclude={"task", "seed"})]
    assert set(names) == set(LearnerConfig.model_fields) - {"task", "seed"}
    assert flag("learning_rate_decay") == "--learning-rate-decay"


def test_an_option_is_checked_against_its_field() -> None:
    import typer

    (height,) = [p for p in option_parameters() if p.name == "height"]
    check = height.default.callback
    assert check(5) == 5 and check(None) is None
    with pytest.raises(typer.BadParameter, match="less than or equal to 12"):
        check(13)
    (matrix,) = [p for p in option_parameters() if p.name == "loss_matrix"]
    assert matrix.default.callback("[[0, 1], [1, 0]]") == [[0.0, 1.0], [1.0, 0.0]]
    with pytest.raises(typer.BadParameter, match="not JSON"):
        matrix.default.callback("[[0, 1]")


def test_cross_field_rules_still_refuse() -> None:
    with pytest.raises(ValidationError, match="n_actions is required for classification"):
        LearnerConfig(n_features=3)
    with pytest.raises(ValidationError, match="give both loss_min and loss_max"):
        LearnerConfig(n_features=3, n_actions=2, loss_min=0.0)
