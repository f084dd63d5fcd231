"""Apprentice mode: the caller's default is played, learned from, and compared with."""

from __future__ import annotations

import numpy as np
import pytest

from banditree.learners import Apprentice, Feedback, InvalidInput, build_learner
from banditree.persistence import dumps, loads


def _breast_cancer_with_a_linear_rule() -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The bundled breast-cancer set and a fixed linear rule (least squares on 200 rows)."""
    from banditree.datasets.sources import load_source

    ds = load_source("breast_cancer")
    X, y = ds.X_train, ds.y_train.astype(np.int64)
    design = np.hstack([X, np.ones((len(X), 1))])
    weights = np.linalg.lstsq(design[:200], np.eye(2)[y[:200]], rcond=None)[0]
    return X, y, np.argmax(design @ weights, axis=1)


def test_agreement_climbs_and_switching_online_keeps_the_parameters() -> None:
    X, y, rule = _breast_cancer_with_a_linear_rule()
    learner = build_learner(
        {"kind": "dgt", "n_features": X.shape[1], "n_actions": 2, "mode": "apprentice"}
    )
    assert isinstance(learner, Apprentice) and learner.mode == "apprentice"
    rng = np.random.default_rng(0)
    early = None
    for i in range(3 * len(X)):
        j = int(rng.integers(len(X)))
        decision = learner.act(X[j], default_action=int(rule[j]))
        assert decision.action == rule[j] and decision.propensity == 1.0
        learner.learn(decision, Feedback(loss=float(decision.action != y[j])))
        if i == 50:
            early = learner.agreement()["recent_agreement_rate"]
    figures = learner.agreement()
    assert early is not None and figures["recent_agreement_rate"] is not None
    assert figures["recent_agreement_rate"] > 0.9 > early
    assert figures["default_observed_reward"] == pytest.approx(
        1.0 - learner.counters["progressive_mean_loss"]
    )
    before = learner.inner.parameters()
    version = learner.version
    learner.set_mode("online")
    after = learner.inner.parameters()
    assert learner.version == version
    for name, value in before.items():
        np.testing.assert_array_equal(value, after[name])
    # online: the model's own (explored) decision; the default is ignored
    decisions = [learner.act(X[j], default_action=0) for j in range(200)]
    assert {d.action for d in decisions} == {0, 1}
    assert all(d.propensity < 1.0 for d in decisions)
    restored = loads(dumps(learner))
    assert isinstance(restored, Apprentice) and restored.mode == "online"
    assert restored.agreement() == learner.agreement()


def test_apprentice_needs_a_default_in_range() -> None:
    learner = build_learner(
        {"kind": "linear", "n_features": 3, "n_actions": 4, "mode": "apprentice"}
    )
    assert isinstance(learner, Apprentice)
    with pytest.raises(InvalidInput, match="needs the caller's default_action"):
        learner.act([0.0, 1.0, 2.0])
    with pytest.raises(InvalidInput, match=r"must be an action in \[0, 3\]"):
        learner.act([0.0, 1.0, 2.0], default_action=4)
    first, second = learner.act_batch([[0.0, 1.0, 2.0], [1.0, 1.0, 1.0]], default_actions=[2, 3])
    assert (first.action, second.action) == (2, 3)
    columns = learner.act_columns([[0.0, 1.0, 2.0]], default_actions=[1])
    assert (columns.action, columns.propensity) == ([1], [1.0])
    with pytest.raises(InvalidInput, match="holds 1 actions for 2 contexts"):
        learner.act_batch([[0.0, 1.0, 2.0], [1.0, 1.0, 1.0]], default_actions=[2])
    with pytest.raises(InvalidInput, match="needs the caller's default_action"):
        learner.act_batch([[0.0, 1.0, 2.0]])
    learner.set_mode("online")  # the defaults are ignored online
    assert len(learner.act_batch([[0.0, 1.0, 2.0]], default_actions=[3])) == 1


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ({"kind": "random", "n_actions": 3}, "needs a classification model that learns"),
        ({"kind": "dgt", "task": "regression"}, "needs a classification model that learns"),
        ({"kind": "dgt", "n_actions": 3, "mode": "shadow"}, "mode"),
    ],
)
def test_bad_apprentice_configs_are_refused(config: dict[str, object], message: str) -> None:
    config = {"n_features": 2, "mode": "apprentice", **config}
    with pytest.raises(ValueError, match=message):
        build_learner(config)
