"""The bandit regression benchmark: a tiny real run writes its table and curves."""

from __future__ import annotations

from pathlib import Path

import pytest

from banditree.datasets import load
from benchmarks.bandit_regression import main, supervised_rmse


def test_tiny_run_reports_both_steps_and_the_ratios(tmp_path: Path) -> None:
    main(
        [
            "--datasets",
            "abalone",
            "--passes",
            "1",
            "--supervised-epochs",
            "1",
            "--supervised-heights",
            "2",
            "--learners",
            "two_point",
            "two_point_constant",
            "linear_two_point",
            "--out",
            str(tmp_path),
            "--no-progress",
        ]
    )
    row = next(
        line for line in (tmp_path / "report.md").read_text().splitlines() if "abalone" in line
    )
    cells = [c.strip() for c in row.strip("|").split("|")]
    two_point, constant, linear, supervised = (float(cells[i]) for i in (2, 3, 4, 6))
    assert all(0.0 < v < 30.0 for v in (two_point, constant, linear, supervised))
    # the decayed step learns differently from the constant one on the same stream
    assert two_point != constant
    assert float(cells[9]) == pytest.approx(two_point / 2.16, abs=2e-3)
    assert float(cells[11]) == pytest.approx(two_point / linear, abs=2e-3)
    assert (tmp_path / "curves.png").stat().st_size > 0


def test_variant_column_learns_with_its_settings(tmp_path: Path) -> None:
    """``--variant`` adds a two-point learner with its settings, in a column of its own."""
    main(
        [
            "--datasets",
            "abalone",
            "--passes",
            "1",
            "--supervised-epochs",
            "1",
            "--supervised-heights",
            "2",
            "--learners",
            "two_point",
            "--variant",
            "forest2",
            '{"kind": "dgt_forest", "n_trees": 2, "aggregate": "average"}',
            "--out",
            str(tmp_path),
            "--no-progress",
        ]
    )
    lines = (tmp_path / "report.md").read_text().splitlines()
    assert lines[0].rstrip().endswith("| forest2 |")
    cells = [c.strip() for c in next(x for x in lines if "abalone" in x).strip("|").split("|")]
    two_point, forest = float(cells[2]), float(cells[12])
    assert 0.0 < forest < 30.0
    assert forest != two_point  # a different model on the same stream


def test_variant_must_be_a_new_name_with_a_json_object(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        main(["--variant", "two_point", "{}", "--out", str(tmp_path), "--no-progress"])
    with pytest.raises(SystemExit):
        main(["--variant", "x", "[1]", "--out", str(tmp_path), "--no-progress"])


def test_supervised_forest_anchor_averages_its_trees(tmp_path: Path) -> None:
    """``--supervised-trees N`` adds the anchor of an averaged forest: N trees' mean."""
    ds = load("abalone")
    single = supervised_rmse(ds, [2], 1, 0)
    assert supervised_rmse(ds, [2], 1, 0, trees=1) == single
    forest = supervised_rmse(ds, [2], 1, 0, trees=2)
    assert 0.0 < forest < 30.0 and forest != single
    args = ["--datasets", "abalone", "--passes", "1", "--supervised-epochs", "1"]
    args += ["--supervised-heights", "2", "--learners", "two_point", "--supervised-trees", "2"]
    main([*args, "--out", str(tmp_path), "--no-progress"])
    lines = (tmp_path / "report.md").read_text().splitlines()
    assert lines[0].rstrip().endswith("| supervised_2_trees |")
    cells = [c.strip() for c in next(x for x in lines if "abalone" in x).strip("|").split("|")]
    assert float(cells[6]) == pytest.approx(single, abs=1e-3)
    assert float(cells[12]) == pytest.approx(forest, abs=1e-3)
