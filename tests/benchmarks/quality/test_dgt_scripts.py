"""The DGT benchmark scripts run end to end at a tiny size and print their tables."""

from __future__ import annotations

import pytest
import torch

from benchmarks.quality import dgt_fidelity
from benchmarks.speed import dgt_latency


def test_latency_script_prints_ratios(capsys: pytest.CaptureFixture[str]) -> None:
    dgt_latency.main(["--heights", "6", "--features", "5", "--calls", "200", "--batch", "32"])
    out = capsys.readouterr().out
    assert "tree us" in out and "matvec us" in out
    assert "target single decision < 15.0 us at h=6" in out


def test_fidelity_script_prints_ours_beside_the_paper(capsys: pytest.CaptureFixture[str]) -> None:
    threads = torch.get_num_threads()
    try:
        dgt_fidelity.main(
            ["--datasets", "segmentation", "--heights", "2", "--seeds", "2", "--epochs", "1"]
        )
    finally:
        torch.set_num_threads(threads)
    lines = capsys.readouterr().out.splitlines()
    row = next(line for line in lines if line.startswith("segmentation "))
    assert "accuracy %" in row and "95.86" in row
    assert "pt" in row.split()[-1]
