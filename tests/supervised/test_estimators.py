"""Supervised DGT (Algorithm 3) on real data, frozen export, and refusal of bad input."""

from __future__ import annotations

import numpy as np
import pytest

from banditree.datasets import load
from banditree.models.dgt.frozen import FrozenTree
from banditree.supervised import DGTClassifier, DGTRegressor, NotFittedError


@pytest.fixture(scope="module")
def segmentation_fit() -> tuple[DGTClassifier, object]:
    ds = load("segmentation")
    clf = DGTClassifier(height=6, epochs=25, progress=False).fit(ds.X_train, ds.y_train)
    return clf, ds


def test_classifier_beats_majority_by_wide_margin(segmentation_fit) -> None:
    clf, ds = segmentation_fit
    majority = np.bincount(ds.y_train).argmax()
    majority_accuracy = float(np.mean(ds.y_test == majority))
    accuracy = clf.score(ds.X_test, ds.y_test)
    assert majority_accuracy < 0.2
    assert accuracy > 0.85
    assert accuracy > majority_accuracy + 0.6
    assert clf.loss_history_[-1] < 0.5 * clf.loss_history_[0]


def test_classifier_freeze_is_self_contained_and_round_trips(segmentation_fit) -> None:
    clf, ds = segmentation_fit
    frozen = clf.freeze()
    back = FrozenTree.from_json(frozen.dumps())
    pred = clf.predict(ds.X_test)
    np.testing.assert_array_equal(clf.classes_[np.argmax(back.predict(ds.X_test), axis=1)], pred)
    assert pred.dtype == ds.y_test.dtype
    np.testing.assert_array_equal(clf.leaves(ds.X_test), back.leaves(ds.X_test))


def test_classifier_keeps_original_labels() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 3))
    labels = np.where(x[:, 0] > 0, "yes", "no")
    clf = DGTClassifier(height=2, epochs=15, progress=False).fit(x, labels)
    assert set(clf.classes_) == {"no", "yes"}
    assert clf.score(x, labels) > 0.9


def test_regressor_beats_mean_in_original_units() -> None:
    ds = load("cpu_act")
    reg = DGTRegressor(height=6, epochs=25, progress=False).fit(ds.X_train, ds.y_train)
    baseline = float(np.sqrt(np.mean((ds.y_test - ds.y_train.mean()) ** 2)))
    rmse = reg.rmse(ds.X_test, ds.y_test)
    assert rmse < 0.3 * baseline
    assert reg.score(ds.X_test, ds.y_test) > 0.9
    pred = reg.predict(ds.X_test)
    assert abs(pred.mean() - ds.y_test.mean()) < 0.1 * ds.y_test.std()
    leaves = reg.freeze().theta[:, 0]
    assert leaves.min() >= ds.y_train.min() - ds.y_train.std()  # original units, not [0, 1]
    assert leaves.max() > 1.0


def test_same_seed_same_tree_other_seed_other_tree() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 4))
    y = x @ np.array([1.0, -2.0, 0.5, 0.0])
    first = DGTRegressor(height=3, epochs=5, seed=7, progress=False).fit(x, y).freeze()
    again = DGTRegressor(height=3, epochs=5, seed=7, progress=False).fit(x, y).freeze()
    other = DGTRegressor(height=3, epochs=5, seed=8, progress=False).fit(x, y).freeze()
    np.testing.assert_array_equal(first.weights, again.weights)
    np.testing.assert_array_equal(first.theta, again.theta)
    assert not np.array_equal(first.weights, other.weights)


def test_progress_bar_is_shown_and_can_be_disabled(capsys: pytest.CaptureFixture[str]) -> None:
    x = np.random.default_rng(2).normal(size=(50, 2))
    y = (x[:, 1] > 0).astype(int)
    DGTClassifier(height=2, epochs=2, progress=True).fit(x, y)
    assert "DGT" in capsys.readouterr().err
    DGTClassifier(height=2, epochs=2, progress=False).fit(x, y)
    assert capsys.readouterr().err == ""


def test_bad_inputs_are_refused_and_leave_the_model_unchanged() -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=(80, 3))
    y = (x[:, 0] > 0).astype(int)
    clf = DGTClassifier(height=2, epochs=3, progress=False)
    with pytest.raises(NotFittedError, match="not fitted"):
        clf.predict(x)
    clf.fit(x, y)
    weights = clf.freeze().weights.copy()
    bad = x.copy()
    bad[4, 2] = np.nan
    with pytest.raises(ValueError, match=r"X\[4, 2\] must be finite"):
        clf.fit(bad, y)
    with pytest.raises(ValueError, match="y must be 1-d with 80 entries"):
        clf.fit(x, y[:-1])
    with pytest.raises(ValueError, match="at least 2 classes"):
        clf.fit(x, np.zeros(80, dtype=int))
    with pytest.raises(ValueError, match="must have 3 columns"):
        clf.predict(x[:, :2])
    with pytest.raises(ValueError, match="non-empty 2-d"):
        clf.predict(x[0])
    np.testing.assert_array_equal(clf.freeze().weights, weights)
    reg = DGTRegressor(height=2, epochs=1, progress=False)
    with pytest.raises(ValueError, match=r"y\[1\] must be finite"):
        reg.fit(x, np.array([0.0, np.inf, *np.zeros(78)]))


@pytest.mark.parametrize("hidden", [(), (8,)])
def test_a_column_constant_in_training_is_ignored_at_prediction(hidden: tuple[int, ...]) -> None:
    """A value never seen in training (an unseen category's column) must not move a split."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(300, 4))
    X[:, 2] = 0.0  # e.g. the "other" column of a feature whose values all have slots
    y = (X[:, 0] + X[:, 1] > 0).astype(int)
    clf = DGTClassifier(height=3, epochs=5, progress=False, hidden=hidden).fit(X, y)
    assert np.all(clf.freeze().weights[:, 2] == 0.0)
    shifted = X.copy()
    shifted[:, 2] = 5.0
    assert np.array_equal(clf.leaves(shifted), clf.leaves(X))
