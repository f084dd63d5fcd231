"""A boosted fit's linear algebra runs numpy's BLAS on one thread, as its trees run."""

from __future__ import annotations

from typing import Any

import lightgbm  # noqa: F401  (its libraries loaded before the counts are read)
import numpy as np
import pytest
from threadpoolctl import threadpool_info

from banditree.models.boosted import fit
from banditree.models.boosted.fit import BoostingSettings, fit_ensemble


def blas_threads() -> list[int]:
    return [lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"]


def test_the_linear_base_is_fitted_on_one_blas_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[list[int]] = []
    fit_linear_base = fit.fit_linear_base

    def watched(*args: Any) -> Any:
        seen.append(blas_threads())
        return fit_linear_base(*args)

    monkeypatch.setattr(fit, "fit_linear_base", watched)
    before = blas_threads()
    rng = np.random.default_rng(0)
    x, actions = rng.normal(size=(300, 4)), rng.integers(0, 3, 300)
    rewards = (actions == (x[:, 0] > 0)).astype(float)
    settings = BoostingSettings(n_trees=5, depth=3, linear_l2=10.0)
    ensemble = fit_ensemble(x, actions, rewards, 3, settings, seed=0)
    assert before and seen == [[1] * len(before)]  # every BLAS held to one thread
    assert blas_threads() == before  # and given back after the fit
    assert ensemble.n_trees == 5
