"""``benchmarks.kernel_speed`` runs both paths and prints a ratio for every figure."""

from __future__ import annotations

import pytest

from banditree import kernel
from benchmarks.kernel_speed import main


@pytest.mark.skipif(kernel.ACTIVE != "native", reason="the native kernel is not active")
def test_a_small_run_prints_every_figure(capsys: pytest.CaptureFixture[str]) -> None:
    main(["--entries", "600", "--rounds", "1", "--ticks", "2", "--only", "sigmoid"])
    out = capsys.readouterr().out
    for figure in ("tick of 1", "tick of 256", "learned entry", "act + learn"):
        row = next(line for line in out.splitlines() if line.startswith(f"| {figure}"))
        assert row.rstrip().endswith("x |")
