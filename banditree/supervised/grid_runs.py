"""The grid's training runs: one after another, or ``jobs`` at once.

On the CPU the runs go to worker processes (forked, so the data are not copied):
a run at ``L = 1`` spends most of its time in Python between small kernels, holding
the GIL, so threads barely overlap while processes do (the figure:
``docs/decisions/0008-library-hot-paths.md``).  On a GPU (which does not survive a fork) they go to threads.  Each finished
epoch is reported back (a queue from the workers) to the progress bar and its
time-left estimate.
"""

from __future__ import annotations

import multiprocessing
import queue
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import numpy as np

from banditree.supervised.config import TrainingConfig
from banditree.supervised.estimator import DGTClassifier, DGTEstimator, DGTRegressor
from banditree.supervised.progress import GridProgress


@dataclass
class GridRun:
    """One grid entry's result on the validation split."""

    settings: dict[str, Any]
    validation_score: float
    loss_history: list[float]
    seconds: float


@dataclass(frozen=True)
class GridData:
    """What every grid run reads: the task, the fit rows and the validation rows."""

    task: str
    x_fit: np.ndarray
    y_fit: np.ndarray
    x_val: np.ndarray
    y_val: np.ndarray


def estimator(task: str, config: TrainingConfig) -> DGTEstimator:
    """A classifier or regressor for ``task`` with ``config``."""
    return DGTClassifier(config) if task == "classification" else DGTRegressor(config)


def score(model: DGTEstimator, x: np.ndarray, y: np.ndarray) -> float:
    """Accuracy, or RMSE in original units."""
    if isinstance(model, DGTRegressor):
        return model.rmse(x, y)
    return model.score(x, y)


def _fit(
    data: GridData, index: int, config: TrainingConfig, on_epoch: Any
) -> tuple[float, list[float], float]:
    t0 = time.perf_counter()
    model = estimator(data.task, config).fit(data.x_fit, data.y_fit, on_epoch)
    seconds = time.perf_counter() - t0
    return score(model, data.x_val, data.y_val), model.loss_history_, seconds


# -- worker processes: the data and the epoch queue are inherited at the fork -------
_WORKER: dict[str, Any] = {}


def _init_worker(data: GridData, epochs: Any) -> None:
    import torch

    torch.set_num_threads(1)
    _WORKER["data"], _WORKER["epochs"] = data, epochs


def _process_run(index: int, config: TrainingConfig) -> tuple[float, list[float], float]:
    epochs = _WORKER["epochs"]
    last = [time.perf_counter()]

    def on_epoch(epoch: int, loss: float) -> None:
        now = time.perf_counter()
        epochs.put((index, now - last[0]))
        last[0] = now

    return _fit(_WORKER["data"], index, config, on_epoch)


def run_grid(
    data: GridData,
    grid: Sequence[dict[str, Any]],
    configs: Sequence[TrainingConfig],
    jobs: int,
    progress: GridProgress,
) -> list[GridRun]:
    """Train every config on the fit rows and score it on the validation rows (in order)."""
    if jobs == 1 or len(configs) == 1:
        out = []
        for i, config in enumerate(configs):
            result = _fit(data, i, config, progress.epoch_callback(i))
            progress.run_finished(i, result[0])
            out.append(GridRun(grid[i], *result))
        return out
    workers = min(jobs, len(configs))
    if configs[0].device != "cpu":
        with ThreadPoolExecutor(max_workers=workers) as threads:
            return _collect(
                grid,
                [
                    threads.submit(_fit, data, i, c, progress.epoch_callback(i))
                    for i, c in enumerate(configs)
                ],
                progress,
            )
    context = multiprocessing.get_context("fork")
    epochs: Any = context.Queue()
    stop = threading.Event()

    def drain() -> None:  # epochs measured in the workers -> the bar
        while not stop.is_set() or not epochs.empty():
            try:
                run, seconds = epochs.get(timeout=0.1)
            except queue.Empty:
                continue
            progress.record(run, seconds)

    reader = threading.Thread(target=drain, daemon=True)
    try:
        with ProcessPoolExecutor(
            max_workers=workers,
            mp_context=context,
            initializer=_init_worker,
            initargs=(data, epochs),
        ) as pool:
            futures = [pool.submit(_process_run, i, c) for i, c in enumerate(configs)]
            reader.start()  # after the workers are forked: they inherit no reader thread
            return _collect(grid, futures, progress)
    finally:
        stop.set()
        if reader.is_alive():
            reader.join()


def _collect(
    grid: Sequence[dict[str, Any]], futures: list[Any], progress: GridProgress
) -> list[GridRun]:
    def done(index: int, future: Any) -> None:
        if future.exception() is None:
            progress.run_finished(index, future.result()[0])

    for i, future in enumerate(futures):
        future.add_done_callback(lambda f, i=i: done(i, f))
    return [GridRun(grid[i], *future.result()) for i, future in enumerate(futures)]
