"""The training protocol: Table 11 grids, validation choice, retrain, default epochs."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from banditree.datasets import Dataset, load
from banditree.supervised.grid import load_grid, paper_grid
from banditree.supervised.protocol import (
    ProtocolOptions,
    default_epochs,
    run_protocol,
    validation_split,
)


def test_paper_grid_sizes_follow_table_11() -> None:
    assert len(paper_grid("classification")) == 3 + 3 * 5
    assert len(paper_grid("regression")) == 2 + 2 * 5
    l1 = load_grid("paper-l1", "classification")
    assert [g["momentum"] for g in l1] == [0.0, 0.3, 0.8]
    assert all(g["hidden"] == [] and g["reg_strength"] == 0.0 for g in l1)
    assert all(g["hidden"] == "table12" for g in paper_grid("regression")[2:])
    assert load_grid("none", "regression") == [{}]


def test_grid_file_expands_choices_and_refuses_unknown_settings(tmp_path: Path) -> None:
    path = tmp_path / "grid.json"
    path.write_text(json.dumps({"momentum": [0.0, 0.5], "hidden": [[], [16, 16]], "epochs": 3}))
    grid = load_grid(str(path), "classification")
    assert len(grid) == 4 and {"momentum": 0.5, "hidden": [16, 16], "epochs": 3} in grid
    path.write_text(json.dumps([{"momentum": 0.3}, {"hidden": [4]}]))
    assert load_grid(str(path), "classification") == [{"momentum": 0.3}, {"hidden": [4]}]
    path.write_text(json.dumps({"momentum": 0.3, "dropout": 0.5}))
    with pytest.raises(ValueError, match="unknown settings \\['dropout'\\]"):
        load_grid(str(path), "classification")
    path.write_text(json.dumps({"momentum": 1.5}))
    with pytest.raises(ValueError, match="momentum must be"):
        load_grid(str(path), "classification")
    with pytest.raises(ValueError, match="--grid must be one of"):
        load_grid(str(tmp_path / "missing.json"), "classification")


def test_default_epochs_scale_with_size() -> None:
    assert default_epochs(54_000) == 30 and default_epochs(100) == 400
    assert default_epochs(10_000) == 100


def test_validation_split_is_disjoint_and_stratified() -> None:
    ds = load("segmentation")
    fit, val = validation_split(ds, 0.2, seed=3)
    assert not set(fit) & set(val) and len(fit) + len(val) == len(ds.y_train)
    counts = np.bincount(ds.y_train[val], minlength=7) / np.bincount(ds.y_train, minlength=7)
    assert np.all(np.abs(counts - 0.2) < 0.02)


def test_protocol_picks_best_validation_run_and_retrains_on_all(tmp_path: Path) -> None:
    full = load("segmentation")
    ds = Dataset("seg", full.task, full.X_train[:600], full.y_train[:600], full.X_test, full.y_test)
    grid = [{"momentum": 0.0, "learning_rate": 1e-4}, {"momentum": 0.8}]
    result = run_protocol(ds, ProtocolOptions(height=3, epochs=8, grid=grid, progress=False))
    report = result.report
    scores = [g["validation_accuracy"] for g in report["grid"]]
    assert scores[1] > scores[0]  # lr 1e-4 barely moves in 8 epochs
    assert report["chosen"]["settings"] == grid[1] and report["chosen"]["momentum"] == 0.8
    assert report["validation_accuracy"] == scores[1]
    assert report["n_train"] + report["n_validation"] == 600
    assert result.model.n_rows == 600  # retrained on train + validation
    test_acc = float(np.mean(result.model.predict(ds.X_test) == ds.y_test))
    assert report["test_accuracy"] == pytest.approx(test_acc)
    assert len(result.final_loss_history) == 8


def test_grid_runs_in_threads_give_the_same_result() -> None:
    full = load("segmentation")
    ds = Dataset("seg", full.task, full.X_train[:400], full.y_train[:400], full.X_test, full.y_test)
    grid = [{"momentum": 0.0}, {"momentum": 0.3}, {"momentum": 0.8}]
    reports = [
        run_protocol(ds, ProtocolOptions(height=3, epochs=3, grid=grid, progress=False, jobs=j))
        for j in (1, 2)
    ]
    assert reports[0].report["grid"][0]["validation_accuracy"] == pytest.approx(
        reports[1].report["grid"][0]["validation_accuracy"]
    )
    for key in ("chosen", "validation_accuracy", "test_accuracy"):
        assert reports[0].report[key] == reports[1].report[key]
    with pytest.raises(ValueError, match="jobs must be >= 1"):
        run_protocol(ds, ProtocolOptions(height=3, epochs=1, grid=grid, progress=False, jobs=0))
