"""Short real-data runs: every documented report field, plots that open, logged propensities."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest

from banditree.datasets import load
from banditree.learners import build_learner
from simulate import SimulationOptions, simulate
from simulate.vw import vowpalwabbit_available
from tests.simulate.conftest import check_report


def test_classification_run_on_pendigits(tmp_path: Path) -> None:
    baselines = ["random", "linear", "vw"]
    report = simulate(
        SimulationOptions(
            data="pendigits",
            model="dgt",
            out=tmp_path,
            rounds=1500,
            seeds=2,
            baselines=baselines,
            config={"learning_rate": 1e-2},
            eval_points=5,
            progress=False,
            log_decisions=True,
        )
    )
    learners = {"dgt", "dgt_full_information", "random", "linear"}
    if vowpalwabbit_available():
        learners.add("vw")
    else:
        assert any("vw skipped" in n for n in report["notices"])
    check_report(tmp_path, task="classification", learners=learners, n_seeds=2)
    entries = report["learners"]
    assert report["n_train"] == len(load("pendigits").y_train)
    assert entries["dgt"]["test_accuracy"] > entries["random"]["test_accuracy"] + 0.3
    assert entries["random"]["regret"] > entries["dgt"]["regret"]
    # exploration costs: the bandit learner's progressive loss exceeds its full-information twin's
    assert entries["dgt"]["regret"] > 0.0


def test_logged_propensities_equal_the_learners_probabilities(tmp_path: Path) -> None:
    simulate(
        SimulationOptions(
            data="wine",
            model="dgt",
            out=tmp_path,
            rounds=300,
            seeds=2,
            baselines=[],
            config={"learning_rate": 1e-2},
            eval_points=3,
            progress=False,
            log_decisions=True,
            explore=0.4,
        )
    )
    with (tmp_path / "decisions.csv").open() as fh:
        rows = list(csv.DictReader(fh))
    assert len(rows) == 600  # two seeds x 300 rounds
    epsilon, k = 0.4, 3
    for seed in (0, 1):
        # replay the logged contexts through a fresh learner of the same configuration:
        # it must report the very same action and probability for every logged round
        mine = [r for r in rows if int(r["seed"]) == seed]
        learner = build_learner(
            {
                "kind": "dgt",
                "n_features": 13,
                "n_actions": k,
                "seed": seed,
                "learning_rate": 1e-2,
                "explorer": "epsilon_greedy",
                "explorer_parameter": epsilon,
                "estimator": "bandit",
            }
        )
        from banditree.learners import Feedback

        for r in mine:
            x = np.array([float(r[f"x{j}"]) for j in range(13)])
            d = learner.act(x, event_id=r["event_id"])
            assert d.action == int(r["action"])
            assert d.propensity == pytest.approx(float(r["propensity"]), abs=1e-15)
            greedy = d.action == d.greedy_action
            assert d.propensity == pytest.approx(
                1 - epsilon + epsilon / k if greedy else epsilon / k
            )
            learner.learn(d, Feedback(loss=float(r["loss"])))


def test_regression_one_point_run_on_abalone(tmp_path: Path) -> None:
    report = simulate(
        SimulationOptions(
            data="abalone",
            model="dgt",
            out=tmp_path,
            rounds=800,
            seeds=2,
            baselines=["linear", "random"],
            feedback="one_point",
            loss="huber",
            huber_xi=2.0,
            config={"learning_rate": 1e-2},
            eval_points=4,
            progress=False,
        )
    )
    check_report(
        tmp_path, task="regression", learners={"dgt", "dgt_full_information", "linear"}, n_seeds=2
    )
    assert any("random skipped" in n for n in report["notices"])
    ds = load("abalone")
    assert report["learners"]["dgt"]["config"]["target_offset"] == ds.y_train.min()
    assert report["learners"]["dgt"]["config"]["target_scale"] == np.ptp(ds.y_train)


def test_two_point_queries_count_both_probes(tmp_path: Path) -> None:
    report = simulate(
        SimulationOptions(
            data="diabetes",
            model="linear",
            out=tmp_path,
            rounds=200,
            seeds=2,
            baselines=[],
            feedback="two_point",
            config={"delta": 5.0},
            eval_points=3,
            progress=False,
        )
    )
    entry = report["learners"]["linear"]
    assert entry["queries_total"] == 400
    assert report["learners"]["linear_full_information"]["queries_total"] == 200


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"loss": "squared"}, "is a regression loss"),
        ({"feedback": "two_point"}, "is for regression"),
        ({"baselines": ["cart"]}, "unknown baseline 'cart'"),
        ({"seeds": 0}, "--seeds must be >= 1"),
        ({"data": "no_such_set"}, "unknown data source 'no_such_set'"),
    ],
)
def test_bad_options_name_the_option(
    tmp_path: Path, changes: dict[str, object], message: str
) -> None:
    options = SimulationOptions(
        data="wine", model="dgt", out=tmp_path, rounds=20, seeds=1, progress=False
    )
    for key, value in changes.items():
        setattr(options, key, value)
    with pytest.raises(ValueError, match=message):
        simulate(options)


def test_intervals_are_clipped_to_the_figures_range() -> None:
    """Few seeds give wide t-intervals; an accuracy band must still stay in [0, 1]."""
    from simulate.report import _figure

    out: dict[str, object] = {}
    _figure(out, "test_accuracy", [0.2, 0.99])
    assert out["test_accuracy_ci95"] == [0.0, 1.0]
    _figure(out, "test_rmse", [0.1, 5.0])
    low, high = out["test_rmse_ci95"]  # type: ignore[misc]
    assert low == 0.0 and high > 5.0
    _figure(out, "regret", [-0.5, 0.5])  # regret may be negative: not clipped
    assert out["regret_ci95"][0] < -0.5  # type: ignore[index]
