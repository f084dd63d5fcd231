"""DGT-Forest: bootstrap-bagged trees, majority vote and mean."""

from __future__ import annotations

import numpy as np
import pytest

from banditree.supervised import DGTForestClassifier, DGTForestRegressor, NotFittedError


@pytest.fixture(scope="module")
def blobs() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    centres = np.array([[0.0, 0.0], [3.0, 0.0], [0.0, 3.0]])
    y = rng.integers(0, 3, size=300)
    return centres[y] + rng.normal(scale=1.2, size=(300, 2)), y


def test_classifier_forest_predicts_the_majority_vote(blobs) -> None:
    x, y = blobs
    forest = DGTForestClassifier(n_trees=5, sample_fraction=0.8, height=3, epochs=8, progress=False)
    forest.fit(x, y)
    assert len(forest.trees_) == 5
    members = np.stack([tree.predict(x) for tree in forest.trees_])  # (5, n)
    counts = np.stack([(members == c).sum(axis=0) for c in range(3)], axis=1)
    np.testing.assert_array_equal(forest.votes(x), counts)
    np.testing.assert_array_equal(forest.predict(x), np.argmax(counts, axis=1))
    assert counts.sum(axis=1).tolist() == [5] * len(x)
    assert (members != members[0]).any(), "bootstrap samples should give different trees"
    weights = [frozen.weights for frozen in forest.freeze()]
    assert not np.array_equal(weights[0], weights[1])
    assert forest.score(x, y) > 0.75


def test_regressor_forest_averages_its_trees() -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(300, 3))
    y = 10.0 + 3.0 * x[:, 0] - x[:, 1] + rng.normal(scale=0.3, size=300)
    forest = DGTForestRegressor(n_trees=4, height=3, epochs=8, progress=False).fit(x, y)
    mean = np.mean([tree.predict(x) for tree in forest.trees_], axis=0)
    np.testing.assert_allclose(forest.predict(x), mean)
    assert forest.rmse(x, y) < float(np.std(y))


def test_forest_settings_are_checked() -> None:
    with pytest.raises(ValueError, match="n_trees must be an integer >= 1"):
        DGTForestClassifier(n_trees=0)
    with pytest.raises(ValueError, match=r"sample_fraction must be in \(0, 1\]"):
        DGTForestRegressor(sample_fraction=1.5)
    with pytest.raises(ValueError, match="epochs must be an integer >= 1"):
        DGTForestRegressor(epochs=0)
    with pytest.raises(NotFittedError):
        DGTForestRegressor().predict(np.zeros((1, 2)))
