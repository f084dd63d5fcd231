"""The bandit regression benchmark: a tiny real run writes its table and curves."""

from __future__ import annotations

from pathlib import Path

import pytest

from benchmarks.bandit_regression import main


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
