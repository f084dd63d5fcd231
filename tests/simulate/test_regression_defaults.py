"""``banditree simulate`` on a regression set: two-point feedback unless told otherwise, and
the linear baseline learns with it instead of diverging."""

from __future__ import annotations

from pathlib import Path

from simulate import SimulationOptions, simulate


def test_regression_defaults_to_two_point_and_the_linear_baseline_converges(
    tmp_path: Path,
) -> None:
    report = simulate(
        SimulationOptions(
            data="abalone", model=None, out=tmp_path / "sim", seeds=1, rounds=1500, baselines=["linear"],
            eval_points=2, progress=False,
        )
    )  # fmt: skip
    assert report["feedback"] == "two_point"
    learners = report["learners"]
    full = learners["dgt_forest_full_information"]["progressive_mean_loss"]
    # one-point feedback (the former default) left the linear baseline at 185 after
    # 3,000 rounds against the forest's 6.4 with every label
    assert learners["linear"]["progressive_mean_loss"] < 1.5 * full
    assert learners["dgt_forest"]["progressive_mean_loss"] < 1.5 * full
