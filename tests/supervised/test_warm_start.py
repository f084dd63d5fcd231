"""The model file round-trips, refuses damage, and warm-starts a bandit learner faithfully."""

from __future__ import annotations

import numpy as np
import pytest

from banditree.datasets import load
from banditree.learners import build_learner
from banditree.learners.warm_start import ModelMismatch, reward_logits
from banditree.models.dgt.trained import InvalidModelFile, TrainedTree
from banditree.persistence import dumps, loads
from banditree.supervised import DGTClassifier, DGTRegressor


@pytest.fixture(scope="module")
def segmentation_tree() -> tuple[DGTClassifier, TrainedTree]:
    ds = load("segmentation")
    clf = DGTClassifier(height=4, epochs=15, hidden=(8,), progress=False).fit(
        ds.X_train, ds.y_train
    )
    return clf, TrainedTree.from_estimator(clf)


def test_file_round_trips_and_predicts_like_the_estimator(segmentation_tree) -> None:
    clf, trained = segmentation_tree
    x = load("segmentation").X_test
    again = TrainedTree.from_bytes(trained.to_bytes())
    assert again.hidden == [8] and again.height == 4 and again.classes == trained.classes
    np.testing.assert_array_equal(again.predict(x), clf.predict(x))
    assert TrainedTree.from_base64(trained.to_base64()).n_rows == clf.n_rows_


def test_damaged_or_foreign_bytes_are_refused(segmentation_tree) -> None:
    _, trained = segmentation_tree
    blob = bytearray(trained.to_bytes())
    blob[-3] ^= 0xFF
    with pytest.raises(InvalidModelFile, match="checksum"):
        TrainedTree.from_bytes(bytes(blob))
    with pytest.raises(InvalidModelFile, match="not a banditree train model file"):
        TrainedTree.from_bytes(b"hello world, not safetensors")
    with pytest.raises(InvalidModelFile, match="not base64"):
        TrainedTree.from_base64("@@@not base64@@@")
    persisted = dumps(build_learner({"kind": "dgt", "n_features": 3, "n_actions": 2}))
    with pytest.raises(InvalidModelFile, match="not a banditree train model file"):
        TrainedTree.from_bytes(persisted)  # a service checkpoint is not a trained tree


@pytest.mark.parametrize("standardize", [True, False])
def test_warm_bandit_plays_the_trained_tree_greedily(segmentation_tree, standardize) -> None:
    clf, trained = segmentation_tree
    ds = load("segmentation")
    config = {**trained.learner_config(), "standardize": standardize}
    learner = build_learner(config, initial_model=trained.to_bytes())
    np.testing.assert_array_equal(learner.predict(ds.X_test), clf.predict(ds.X_test))
    cold = build_learner(config)
    assert np.mean(cold.predict(ds.X_test) == ds.y_test) < 0.5
    # a checkpoint of the warm learner restores the warm parameters
    restored = loads(dumps(learner))
    np.testing.assert_array_equal(restored.predict(ds.X_test), clf.predict(ds.X_test))


def test_reward_logits_are_class_probabilities() -> None:
    logits = np.array([[2.0, 0.0], [0.0, 0.0]])
    out = reward_logits(logits, (0, 2), n_actions=3)
    prob = 1.0 / (1.0 + np.exp(-out))
    np.testing.assert_allclose(prob[0, [0, 2]], np.exp([2, 0]) / np.exp([2, 0]).sum())
    np.testing.assert_allclose(prob[:, 1], 1e-3)  # action 1 never was a label


def test_regression_leaves_map_to_the_learner_target_scale() -> None:
    ds = load("abalone")
    reg = DGTRegressor(height=3, epochs=5, progress=False).fit(ds.X_train, ds.y_train)
    trained = TrainedTree.from_estimator(reg)
    for offset, scale in [(trained.target_low, trained.target_span), (-3.0, 50.0)]:
        config = {**trained.learner_config(), "target_offset": offset, "target_scale": scale}
        learner = build_learner(config, initial_model=trained)
        np.testing.assert_allclose(learner.predict(ds.X_test), reg.predict(ds.X_test), atol=1e-9)


def test_a_regression_warm_start_that_names_no_kind_is_the_trees_dgt() -> None:
    """The regression default is a forest; a warm start builds the ``dgt`` it is given."""
    ds = load("abalone")
    reg = DGTRegressor(height=3, epochs=2, progress=False).fit(ds.X_train, ds.y_train)
    trained = TrainedTree.from_estimator(reg)
    config = {k: v for k, v in trained.learner_config().items() if k != "kind"}
    learner = build_learner(config, initial_model=trained)
    assert learner.config()["kind"] == "dgt"
    np.testing.assert_allclose(learner.predict(ds.X_test), reg.predict(ds.X_test), atol=1e-9)
    forest = {**config, "kind": "dgt_forest"}  # named: refused, not silently changed
    with pytest.raises(ModelMismatch, match="kind"):
        build_learner(forest, initial_model=trained)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"n_features": 5}, "n_features"),
        ({"height": 5}, "height"),
        ({"hidden": [9]}, "hidden"),
        ({"n_actions": 3}, "n_actions"),
        ({"task": "regression", "n_actions": None}, "task"),
        ({"kind": "linear"}, "kind"),
    ],
)
def test_mismatched_config_is_refused_naming_the_field(segmentation_tree, change, field) -> None:
    _, trained = segmentation_tree
    config = {**trained.learner_config(), **change}
    with pytest.raises(ModelMismatch) as info:
        build_learner(config, initial_model=trained)
    assert info.value.field == field and field in str(info.value)
