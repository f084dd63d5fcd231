"""The public sets read from River's and scikit-learn's wheels (skipped where not installed)."""

from __future__ import annotations

import numpy as np
import pytest

from benchmarks.quality.external_sets import EXTERNAL, load_external


@pytest.mark.parametrize(
    "name,package,rows,features",
    [
        ("river_bananas", "river", 5300, 2),
        ("river_phishing", "river", 1250, 9),
        ("sklearn_wdbc", "sklearn", 569, 30),
    ],
)
def test_external_set_loads_with_a_stratified_split(
    name: str, package: str, rows: int, features: int
) -> None:
    pytest.importorskip(package)
    ds = load_external(name)
    assert ds.task == "classification" and ds.n_classes == 2
    assert len(ds.y_train) + len(ds.y_test) == rows and ds.n_features == features
    assert np.isfinite(ds.X_train).all() and np.isfinite(ds.X_test).all()
    # stratified: both splits hold the classes in the same share (to one row)
    share = [np.mean(ds.y_train == 1), np.mean(ds.y_test == 1)]
    assert abs(share[0] - share[1]) < 2 / len(ds.y_test)
    # seeded: the same seed gives the same split
    assert np.array_equal(load_external(name).y_test, ds.y_test)


def test_unknown_external_set_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown external set"):
        load_external("nope")
    assert "river_bananas" in EXTERNAL
