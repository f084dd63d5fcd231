"""The regression default is a 4-tree averaged ``dgt_forest``; a config that names its
kind or forest size keeps them, and configs stored before keep their single tree."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

from banditree.learners import Feedback, LearnerConfig, build_learner
from banditree.learners.config import REGRESSION_FOREST_TREES
from banditree.learners.config.defaults import BOOSTED_TREES
from banditree.learners.factory import restore_learner
from banditree.models.dgt.forest_spec import DGTForestSpec
from banditree.models.dgt.spec import DGTSpec


def _regression(**extra: Any) -> dict[str, Any]:
    return {"task": "regression", "n_features": 4, "estimator": "two_point", "seed": 1, **extra}


@pytest.mark.parametrize(
    ("body", "kind", "n_trees"),
    [
        ({"n_features": 4, "n_actions": 3}, "boosted", BOOSTED_TREES),
        (_regression(), "dgt_forest", REGRESSION_FOREST_TREES),
        (_regression(kind="dgt"), "dgt", 10),
        (_regression(kind="dgt_forest"), "dgt_forest", REGRESSION_FOREST_TREES),
        (_regression(n_trees=7), "dgt_forest", 7),
        (_regression(kind="tel"), "tel", 10),
        ({"n_features": 4, "n_actions": 3, "kind": "dgt_forest"}, "dgt_forest", 10),
    ],
)
def test_kind_and_forest_size_default_by_task(
    body: dict[str, Any], kind: str, n_trees: int
) -> None:
    config = LearnerConfig(**body)
    assert (config.kind, config.n_trees) == (kind, n_trees)
    # what is stored names them, so the model rebuilds as it was built
    assert LearnerConfig.from_stored(config.model_dump(mode="json")) == config


def test_a_config_stored_before_keeps_its_single_tree() -> None:
    stored = LearnerConfig(**_regression()).model_dump(mode="json")
    stored.update(kind="dgt", n_trees=10)  # every field is stored, the kind "dgt" among them
    stored.pop("learning_rate_decay")
    stored.pop("bagging")
    config = LearnerConfig.from_stored(stored)
    assert (config.kind, config.n_trees) == ("dgt", 10)
    assert isinstance(build_learner(config).model, DGTSpec)


def test_regression_forests_learn_unbagged_unless_told() -> None:
    """Bagging: off for regression, on for classification; stored forests keep theirs."""
    assert not LearnerConfig(**_regression()).resolved_bagging
    assert LearnerConfig(**_regression(bagging=True)).resolved_bagging
    assert LearnerConfig(n_features=4, n_actions=3, kind="dgt_forest").resolved_bagging
    stored = LearnerConfig(**_regression()).model_dump(mode="json")
    stored.pop("bagging")  # a regression forest stored before the setting was bagged
    assert LearnerConfig.from_stored(stored).resolved_bagging
    spec = build_learner(_regression()).model
    assert isinstance(spec, DGTForestSpec) and not spec.bagging


def test_a_bad_task_is_the_one_field_named() -> None:
    with pytest.raises(ValidationError) as err:
        LearnerConfig(task="clustering", n_features=4)
    named = {e["loc"][0] for e in err.value.errors() if e["type"] != "default_factory_not_called"}
    assert named == {"task"}


def test_default_forest_averages_its_trees_learns_and_restores() -> None:
    learner = build_learner(_regression(target_scale=4.0, target_offset=-2.0))
    spec = learner.model
    assert isinstance(spec, DGTForestSpec) and spec.n_trees == REGRESSION_FOREST_TREES
    rng = np.random.default_rng(0)
    x = rng.normal(size=(3000, 4))
    y = np.where(x[:, 0] > 0, 1.0, -1.0) + 0.3 * x[:, 1]
    test = rng.normal(size=(400, 4))
    truth = np.where(test[:, 0] > 0, 1.0, -1.0) + 0.3 * test[:, 1]
    before = float(np.sqrt(np.mean((learner.predict(test) - truth) ** 2)))
    for row, target in zip(x, y.tolist(), strict=True):
        d = learner.act(row)
        assert d.probes is not None
        learner.learn(d, Feedback(losses=[(p - target) ** 2 for p in d.probes]))
    after = float(np.sqrt(np.mean((learner.predict(test) - truth) ** 2)))
    assert after < 0.6 * before and after < 0.6 * float(np.std(truth))
    # the prediction is the mean of the trees' (target units: offset + scale * output)
    snap = learner._snapshot
    z = learner._standardized(test, snap)
    trees = np.mean([t.predict(z) for t in snap.frozen], axis=0)[:, 0]
    np.testing.assert_allclose(learner.predict(test), -2.0 + 4.0 * trees, rtol=1e-9, atol=1e-9)
    restored = restore_learner(*learner.state())
    np.testing.assert_array_equal(restored.predict(test), learner.predict(test))
