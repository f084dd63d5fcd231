"""The training benchmarks run end to end at a tiny size and print their tables."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from benchmarks.quality import train_fidelity, warm_start
from benchmarks.speed import train_speed


@pytest.fixture(autouse=True)
def keep_torch_threads():
    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def test_speed_script_prints_both_loops_and_the_ratio(capsys: pytest.CaptureFixture[str]) -> None:
    train_speed.main(["--rows", "512", "--height", "4", "--epochs", "1", "--repeats", "1"])
    out = capsys.readouterr().out
    assert " fused " in out and " autograd " in out and "fused / autograd:" in out


def test_fidelity_script_prints_paper_and_cart_rows(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    data = tmp_path / "blobs.npz"
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.normal(size=(300, 4))
    np.savez(data, X=x, y=(x[:, 0] > 0).astype(int))
    args = ["--datasets", "segmentation", "--seeds", "1", "--epochs", "1", "--grid", "none"]
    train_fidelity.main([*args, "--data", str(data), "--unseen-height", "2"])
    lines = capsys.readouterr().out.splitlines()
    paper = next(line for line in lines if line.startswith("segmentation "))
    assert "95.86" in paper and "paper" in paper and "pt" in paper
    unseen = next(line for line in lines if line.startswith("blobs "))
    assert "CART" in unseen


def test_warm_start_script_prints_cold_and_warm(capsys: pytest.CaptureFixture[str]) -> None:
    warm_start.main(
        ["--datasets", "segmentation", "--seeds", "1", "--rounds", "40", "--grid", "none",
         "--height", "3"]
    )  # fmt: skip
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("segm"))
    assert len(row.split()) == 11  # name, cold +- sd, warm +- sd, ratio, three accuracies
