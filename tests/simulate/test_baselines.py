"""The simulator's rival baselines: VW's strongest by default, the paper's epsilon by name,
TEUCB and TETS."""

from __future__ import annotations

from pathlib import Path

import pytest

from simulate import SimulationOptions, simulate
from simulate.vw import simulator_vw_arguments


def test_vw_is_regcb_opt_and_the_papers_epsilon_has_a_name() -> None:
    assert simulator_vw_arguments("vw", 5) == (
        "--cb_explore_adf --regcbopt --mellowness 0.01 -q sa"
    )
    assert simulator_vw_arguments("vw-epsilon", 5) == "--cb_explore 5 --epsilon 0.3"
    assert simulator_vw_arguments("vw-epsilon", 3, 0.05, 0.5) == (
        "--cb_explore 3 --epsilon 0.05 -l 0.5"
    )
    with pytest.raises(ValueError, match="unknown VW baseline 'vw-bag'"):
        simulator_vw_arguments("vw-bag", 3)


def test_the_rivals_run_and_learn_in_the_simulator(tmp_path: Path) -> None:
    pytest.importorskip("vowpalwabbit")
    pytest.importorskip("lightgbm")
    report = simulate(
        SimulationOptions(
            data="satimage",
            model=None,
            out=tmp_path,
            rounds=1000,
            seeds=1,
            baselines=["random", "vw", "vw-epsilon", "teucb", "tets"],
            eval_points=2,
            progress=False,
        )
    )
    entries = report["learners"]
    assert {"vw", "vw-epsilon", "teucb", "tets"} <= set(entries)
    assert "--regcbopt" in entries["vw"]["config"]["arguments"]
    assert "--epsilon 0.3" in entries["vw-epsilon"]["config"]["arguments"]
    assert entries["teucb"]["config"]["rule"] == "ucb"
    assert entries["vw"]["config"]["features"] == "z-scored"
    # seed 0: held-out accuracy 0.81 / 0.75 / 0.81 / 0.84 against random's 0.16; progressive
    # loss below the best constant's by 0.48 / 0.24 / 0.42 / 0.15
    for name in ("vw", "vw-epsilon", "teucb", "tets"):
        assert entries[name]["test_accuracy"] > entries["random"]["test_accuracy"] + 0.4, name
        assert entries[name]["regret_vs_constant"] < -0.1, name


def test_the_rivals_skip_data_with_a_schema_and_unknown_names_are_refused(
    tmp_path: Path,
) -> None:
    with pytest.raises(ValueError, match="unknown baseline 'xgb'"):
        simulate(
            SimulationOptions(
                data="wine", model=None, out=tmp_path, rounds=50, seeds=1, baselines=["xgb"],
                progress=False,
            )
        )  # fmt: skip
    report = simulate(
        SimulationOptions(
            data="wine", model=None, out=tmp_path, rounds=50, seeds=1, baselines=["teucb"],
            feedback="full", eval_points=1, progress=False,
        )
    )  # fmt: skip
    assert any("teucb skipped: it needs bandit classification" in n for n in report["notices"])
