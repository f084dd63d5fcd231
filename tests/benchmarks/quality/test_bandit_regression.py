"""The bandit regression benchmark: a tiny real run writes its table and curves."""

from __future__ import annotations

from pathlib import Path

import pytest

from banditree.datasets import load
from benchmarks.quality.bandit_regression import main, supervised_rmse


def tiny_run(tmp_path: Path, *learners_and_options: str) -> tuple[list[str], dict[str, str]]:
    """One pass over Abalone with a 1-epoch, height-2 supervised anchor: the report's
    lines and the cells of its Abalone row by column header."""
    args = ["--datasets", "abalone", "--passes", "1", "--supervised-epochs", "1"]
    args += ["--supervised-heights", "2", "--learners", *learners_and_options]
    main([*args, "--out", str(tmp_path), "--no-progress"])
    lines = (tmp_path / "report.md").read_text().splitlines()
    header = [c.strip() for c in lines[0].strip().strip("|").split("|")]
    row = next(line for line in lines if "abalone" in line)
    cells = [c.strip() for c in row.strip().strip("|").split("|")]
    return lines, dict(zip(header, cells, strict=True))


def test_tiny_run_reports_both_steps_and_the_ratios(tmp_path: Path) -> None:
    _, cells = tiny_run(
        tmp_path, "two_point", "two_point_single_tree", "two_point_constant", "linear_two_point"
    )
    two_point, single, constant, linear, supervised, forest = (
        float(cells[c])
        for c in (
            "two-point",
            "two-point, single tree",
            "two-point, constant step",
            "linear two-point",
            "supervised DGT",
            "supervised forest",
        )
    )
    assert all(0.0 < v < 30.0 for v in (two_point, single, constant, linear, supervised, forest))
    # the decayed step learns differently from the constant one on the same stream, and
    # the default (a forest) differently from one tree
    assert two_point != constant and two_point != single
    assert float(cells["2pt / paper"]) == pytest.approx(two_point / 2.16, abs=2e-3)
    assert float(cells["2pt / supervised"]) == pytest.approx(two_point / supervised, abs=2e-3)
    assert float(cells["2pt / supervised forest"]) == pytest.approx(two_point / forest, abs=2e-3)
    assert float(cells["2pt / linear"]) == pytest.approx(two_point / linear, abs=2e-3)
    assert (tmp_path / "curves.png").stat().st_size > 0


def test_variant_column_learns_with_its_settings(tmp_path: Path) -> None:
    """``--variant`` adds a two-point learner with its settings, in a column of its own."""
    forest2 = '{"kind": "dgt_forest", "n_trees": 2, "aggregate": "average"}'
    lines, cells = tiny_run(tmp_path, "two_point", "--variant", "forest2", forest2)
    assert lines[0].rstrip().endswith("| forest2 |")
    two_point, forest = float(cells["two-point"]), float(cells["forest2"])
    assert 0.0 < forest < 30.0
    assert forest != two_point  # a different model (2 trees, not 4) on the same stream


def test_variant_must_be_a_new_name_with_a_json_object(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        main(["--variant", "two_point", "{}", "--out", str(tmp_path), "--no-progress"])
    with pytest.raises(SystemExit):
        main(["--variant", "x", "[1]", "--out", str(tmp_path), "--no-progress"])


def test_supervised_forest_anchor_averages_its_trees(tmp_path: Path) -> None:
    """``--supervised-trees N`` sets the forest anchor: N supervised trees' mean."""
    ds = load("abalone")
    single = supervised_rmse(ds, [2], 1, 0)
    assert supervised_rmse(ds, [2], 1, 0, trees=1) == single
    forest = supervised_rmse(ds, [2], 1, 0, trees=2)
    assert 0.0 < forest < 30.0 and forest != single
    _, cells = tiny_run(tmp_path, "two_point", "--supervised-trees", "2")
    assert float(cells["supervised DGT"]) == pytest.approx(single, abs=1e-3)
    assert float(cells["supervised forest"]) == pytest.approx(forest, abs=1e-3)


def test_tail_passes_report_the_spread_of_the_last_passes(tmp_path: Path) -> None:
    """``--tail-passes N``: the test RMSE after each of the last N passes, whose last is
    the final figure of the main table."""
    args = ["--datasets", "abalone", "--passes", "3", "--tail-passes", "2"]
    args += ["--supervised-epochs", "1", "--supervised-heights", "2", "--supervised-trees", "1"]
    main([*args, "--learners", "two_point", "--out", str(tmp_path), "--no-progress"])
    lines = (tmp_path / "report.md").read_text().splitlines()
    final = float(lines[2].strip().strip("|").split("|")[2])
    header = next(i for i, line in enumerate(lines) if "last 2 passes: mean" in line)
    row = [c.strip() for c in lines[header + 2].strip().strip("|").split("|")]
    assert row[:2] == ["abalone", "two_point"]
    tail_final, mean, low, high = (float(v) for v in row[2:])
    assert tail_final == pytest.approx(final, rel=1e-3)
    assert low <= mean <= high and low <= tail_final <= high
    assert low < high  # two different passes' models
