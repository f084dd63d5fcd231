"""The paper's supervised protocol: grid search on a validation split, retrain, test.

Hold out ``validation_fraction`` of the train split (stratified for classification),
train every grid entry on the rest, pick the best validation score (accuracy, or
RMSE in original units; ties go to the earlier entry), retrain it on train +
validation and score the test split once.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from banditree.datasets import Dataset, stratified_split
from banditree.models.dgt.trained import TrainedTree
from banditree.supervised.config import TrainingConfig
from banditree.supervised.grid_runs import GridData, GridRun, estimator, run_grid, score
from banditree.supervised.progress import GridProgress, RunCost, TimeLeft

#: Epochs by training-set size: ``clip(ceil(1e6 / n), 30, 400)`` (the paper: 30-400 by size).
EPOCH_BUDGET_ROWS = 1_000_000


def default_epochs(n_rows: int) -> int:
    """The default number of epochs for ``n_rows`` training rows."""
    return int(min(400, max(30, math.ceil(EPOCH_BUDGET_ROWS / max(1, n_rows)))))


@dataclass(frozen=True)
class ProtocolOptions:
    """Settings of one :func:`run_protocol` call that the grid does not vary."""

    height: int = 6
    epochs: int | None = None
    grid: list[dict[str, Any]] = field(default_factory=lambda: [{}])
    validation_fraction: float = 0.2
    seed: int = 0
    device: str = "cpu"
    progress: bool = True
    base: dict[str, Any] = field(default_factory=dict)
    jobs: int = 1


@dataclass
class ProtocolResult:
    """The chosen model, its scores, and every grid run."""

    model: TrainedTree
    report: dict[str, Any]
    runs: list[GridRun]
    final_loss_history: list[float]


def validation_split(ds: Dataset, fraction: float, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Seeded train / validation row indices of the train split (stratified for classes)."""
    if not 0.0 < fraction < 1.0:
        raise ValueError(f"validation_fraction must be in (0, 1), got {fraction}")
    if ds.task == "classification":
        return stratified_split(ds.y_train, fraction, seed)
    order = np.random.default_rng(seed).permutation(ds.y_train.shape[0])
    n_val = max(1, round(fraction * order.shape[0]))
    return order[n_val:], order[:n_val]


def run_protocol(ds: Dataset, options: ProtocolOptions) -> ProtocolResult:
    """Grid search on a validation split, retrain the best on train + validation, test it."""
    start_all = time.perf_counter()
    fit_rows, val_rows = validation_split(ds, options.validation_fraction, options.seed)
    if fit_rows.size < 2 or val_rows.size < 1:
        raise ValueError(f"{ds.name}: too few training rows ({ds.y_train.shape[0]}) to validate")
    if options.jobs < 1:
        raise ValueError(f"jobs must be >= 1, got {options.jobs}")
    epochs = options.epochs or default_epochs(fit_rows.shape[0])
    base = TrainingConfig(
        height=options.height,
        epochs=epochs,
        seed=options.seed,
        device=options.device,
        progress=options.progress,
    )
    configs = [replace(base, **_config_fields(s, options.base)) for s in options.grid]
    higher_is_better = ds.task == "classification"
    x_fit, y_fit = ds.X_train[fit_rows], ds.y_train[fit_rows]
    x_val, y_val = ds.X_train[val_rows], ds.y_train[val_rows]
    n_outputs = ds.n_classes if higher_is_better else 1
    costs = [RunCost.of(c, fit_rows.shape[0], ds.n_features, n_outputs) for c in configs]
    n_all = ds.y_train.shape[0]
    lanes = min(options.jobs, len(configs))
    clock = TimeLeft(costs, lanes)
    # the retrain's settings are known after the grid: until then, the grid's mean size,
    # then the best run's so far
    guess = RunCost(
        math.ceil(n_all / base.batch_size),
        epochs,
        sum(c.macs_per_batch for c in costs) / len(costs),
    )
    retrain_index = clock.add(guess, serial=True)
    progress = GridProgress(clock, options.progress, start_all, len(configs))
    progress.expect_retrain(
        retrain_index,
        [RunCost.of(c, n_all, ds.n_features, n_outputs) for c in configs],
        higher_is_better,
    )
    quiet = [replace(c, progress=False) for c in configs]  # one bar: work units
    runs = run_grid(
        GridData(ds.task, x_fit, y_fit, x_val, y_val), options.grid, quiet, options.jobs, progress
    )
    scores = [r.validation_score for r in runs]
    best = int(np.argmax(scores) if higher_is_better else np.argmin(scores))
    t0 = time.perf_counter()
    chosen_cost = RunCost.of(configs[best], n_all, ds.n_features, n_outputs)
    progress.retrain(retrain_index, chosen_cost)
    final = estimator(ds.task, quiet[best]).fit(
        ds.X_train, ds.y_train, progress.epoch_callback(retrain_index)
    )
    retrain_seconds = time.perf_counter() - t0
    progress.close()
    test_score = score(final, ds.X_test, ds.y_test)
    figure = "accuracy" if higher_is_better else "rmse"
    chosen = configs[best]
    report: dict[str, Any] = {
        "task": ds.task,
        "dataset": ds.name,
        "n_train": int(fit_rows.shape[0]),
        "n_validation": int(val_rows.shape[0]),
        "n_test": int(ds.y_test.shape[0]),
        "n_features": ds.n_features,
        "height": options.height,
        "epochs": epochs,
        "seed": options.seed,
        "device": options.device,
        "chosen": {
            "momentum": chosen.momentum,
            "L": 3 if isinstance(chosen.hidden, str) else len(chosen.hidden) + 1,
            "hidden": chosen.hidden if isinstance(chosen.hidden, str) else list(chosen.hidden),
            "regularization": chosen.regularization,
            "reg_strength": chosen.reg_strength,
            "settings": runs[best].settings,
        },
        f"validation_{figure}": runs[best].validation_score,
        f"test_{figure}": test_score,
        "grid": [
            {
                "settings": r.settings,
                f"validation_{figure}": r.validation_score,
                "final_training_loss": r.loss_history[-1],
                "seconds": r.seconds,
            }
            for r in runs
        ],
        "retrain_seconds": retrain_seconds,
        "seconds": time.perf_counter() - start_all,
        "jobs": options.jobs,
        "time_left_estimates": progress.estimates,
    }
    info = {"dataset": ds.name, "training": _jsonable(chosen), "report": {"test": test_score}}
    return ProtocolResult(
        TrainedTree.from_estimator(final, info), report, runs, final.loss_history_
    )


def _config_fields(settings: dict[str, Any], base: dict[str, Any]) -> dict[str, Any]:
    values = {**base, **settings}
    if isinstance(values.get("hidden"), list):
        values["hidden"] = tuple(values["hidden"])
    return values


def _jsonable(config: TrainingConfig) -> dict[str, Any]:
    out = {k: getattr(config, k) for k in config.__dataclass_fields__}
    out["hidden"] = config.hidden if isinstance(config.hidden, str) else list(config.hidden)
    return out
