"""Work units and the time-left estimate of ``banditree train``'s grid search.

A grid mixes runs whose cost differs by more than an order of magnitude (an ``L = 3``
run of height 8 against an ``L = 1`` run), so counting runs says little about the time left.  Each run's cost is
its mini-batches times a per-batch cost that grows with the multiply-adds of one
row through the tree (:func:`row_macs`):

    seconds per batch = a + b * macs per batch

``a`` is the fixed cost of a step (Python, kernel launches) and ``b`` the cost of a
multiply-add.  Before any epoch has finished the prior ratio :data:`OVERHEAD_MACS`
(``a / b``, measured on a CPU) weights the runs; every finished epoch is a
measurement, and :class:`TimeLeft` refits the scale (one kind of run seen) or both
``a`` and ``b`` (runs of different cost seen) to the measured per-batch times.
The time left is the remaining batches of each run times its predicted (or, for a
run under way, its own measured) per-batch time, shared over the parallel lanes.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tqdm.auto import tqdm

from banditree.models.dgt.tree import table12_hidden
from banditree.supervised.config import TrainingConfig

#: multiply-adds per batch that cost as much as the fixed cost of one step (CPU, 1 thread)
OVERHEAD_MACS = 5_500_000


def row_macs(config: TrainingConfig, n_features: int, n_outputs: int) -> int:
    """Multiply-adds of one row's forward pass: node layers, path scores, leaf row."""
    n_internal = 2**config.height - 1
    n_leaves = n_internal + 1
    hidden = table12_hidden(config.height) if isinstance(config.hidden, str) else config.hidden
    widths = [n_features + 1, *hidden, n_internal]
    layers = sum(a * b for a, b in itertools.pairwise(widths))
    return layers + n_internal * n_leaves + n_leaves * n_outputs


@dataclass(frozen=True)
class RunCost:
    """One training run's size: batches per epoch, epochs, multiply-adds per batch."""

    batches_per_epoch: int
    epochs: int
    macs_per_batch: float

    @classmethod
    def of(cls, config: TrainingConfig, n_rows: int, n_features: int, n_outputs: int) -> RunCost:
        rows = min(config.batch_size, n_rows)
        return cls(
            math.ceil(n_rows / config.batch_size),
            config.epochs,
            float(rows * row_macs(config, n_features, n_outputs)),
        )

    @property
    def batches(self) -> int:
        return self.batches_per_epoch * self.epochs

    @property
    def units(self) -> float:
        """Work units: batches weighted by the prior per-batch cost (1 = one bare step)."""
        return self.batches * (1.0 + self.macs_per_batch / OVERHEAD_MACS)


class TimeLeft:
    """Time-left estimate of a list of runs from the measured time of their epochs.

    :meth:`record` is called after each finished epoch (from any thread); runs
    appended later (the final retrain) join with :meth:`add`.
    """

    def __init__(self, runs: Sequence[RunCost], lanes: int = 1) -> None:
        self.runs = list(runs)
        self.lanes = max(1, lanes)
        self.done = [0] * len(self.runs)  # epochs finished per run
        self.seconds = [0.0] * len(self.runs)  # seconds of those epochs
        self.first = [0.0] * len(self.runs)  # seconds of each run's first epoch
        self._lock = threading.Lock()
        self.serial: set[int] = set()  # runs that start after all the others, alone

    def add(self, run: RunCost, serial: bool = False) -> int:
        """Append a run (``serial``: it runs alone after the others); returns its index."""
        with self._lock:
            self.runs.append(run)
            self.done.append(0)
            self.seconds.append(0.0)
            self.first.append(0.0)
            if serial:
                self.serial.add(len(self.runs) - 1)
            return len(self.runs) - 1

    def replace(self, run: int, cost: RunCost) -> None:
        """Change a run not yet started (the final retrain, once its settings are known)."""
        with self._lock:
            self.runs[run] = cost

    def record(self, run: int, seconds: float) -> None:
        """One more epoch of ``run`` finished, taking ``seconds``."""
        with self._lock:
            if self.done[run] == 0:
                self.first[run] = seconds
            self.done[run] += 1
            self.seconds[run] += seconds

    def _pace(self, run: int) -> tuple[int, float]:
        """Epochs and their seconds that measure ``run``'s pace: past its first epoch
        (start-up, warm-up) once it has more than one."""
        done, seconds = self.done[run], self.seconds[run]
        if done > 1:
            return done - 1, seconds - self.first[run]
        return done, seconds

    def per_batch_model(self) -> tuple[float, float] | None:
        """``(a, b)`` of ``seconds per batch = a + b * macs``, fitted to the epochs
        measured so far (None before the first)."""
        points = []
        for i, r in enumerate(self.runs):
            d, s = self._pace(i)
            if d > 0:
                points.append((r.macs_per_batch, s / (d * r.batches_per_epoch), d))
        if not points:
            return None
        weight = sum(w for _, _, w in points)
        mean_m = sum(m * w for m, _, w in points) / weight
        mean_s = sum(s * w for _, s, w in points) / weight
        var = sum(w * (m - mean_m) ** 2 for m, _, w in points) / weight
        # wide enough spread of costs: fit both; else keep the prior ratio a / b
        if var > 0 and math.sqrt(var) > 0.5 * (mean_m + OVERHEAD_MACS):
            cov = sum(w * (m - mean_m) * (s - mean_s) for m, s, w in points) / weight
            b = cov / var
            a = mean_s - b * mean_m
            if a > 0 and b > 0:
                return a, b
        b = mean_s / (OVERHEAD_MACS + mean_m)
        return b * OVERHEAD_MACS, b

    def seconds_left(self) -> float | None:
        """Estimated wall-clock seconds to finish every run (None before any epoch)."""
        with self._lock:
            model = self.per_batch_model()
            if model is None:
                return None
            a, b = model
            work = tail = 0.0
            running = 0
            for i, (run, done) in enumerate(zip(self.runs, self.done, strict=True)):
                left = run.epochs - done
                if left <= 0:
                    continue
                if done > 0:  # its own measured pace
                    counted, seconds = self._pace(i)
                    need = left * seconds / counted
                else:
                    need = left * run.batches_per_epoch * (a + b * run.macs_per_batch)
                if i in self.serial:
                    tail += need
                else:
                    work += need
                    running += 1
            return work / max(1, min(self.lanes, running)) + tail


def format_seconds(seconds: float | None) -> str:
    """``about 3 min 20 s left`` (``estimating...`` before the first measurement)."""
    if seconds is None:
        return "time left: estimating..."
    total = round(seconds)
    if total >= 3600:
        return f"about {total // 3600} h {total % 3600 // 60:02d} min left"
    if total >= 60:
        return f"about {total // 60} min {total % 60:02d} s left"
    return f"about {total} s left"


class GridProgress:
    """One bar over the grid and the retrain, in work units, with the time left.

    Also samples ``(elapsed, estimated seconds left)`` at every tenth of the work
    (:attr:`estimates`, written to the report) so the estimate can be judged.
    """

    def __init__(self, clock: TimeLeft, show: bool, start: float, n_runs: int) -> None:
        self.clock, self.start, self.n_runs = clock, start, n_runs
        self.finished = 0
        self.total = sum(r.units for r in clock.runs)
        self.bar = tqdm(
            total=round(self.total),
            disable=not show,
            desc=f"grid 0/{n_runs} runs",
            unit="unit",
            smoothing=0,
            bar_format="{desc}: {percentage:3.0f}%|{bar}| {elapsed}{postfix}",
        )
        self.bar.set_postfix_str(format_seconds(None), refresh=False)
        self.units_done = 0.0
        self.estimates: list[dict[str, float]] = []
        self._lock = threading.Lock()
        self._retrain: tuple[int, list[RunCost], bool] | None = None
        self._best: tuple[float, int] | None = None

    def epoch_callback(self, run: int) -> Callable[[int, float], None]:
        """``on_epoch`` for a fit of ``run`` in this process (times its epochs)."""
        last = [time.perf_counter()]

        def on_epoch(epoch: int, loss: float) -> None:
            now = time.perf_counter()
            self.record(run, now - last[0])
            last[0] = now

        return on_epoch

    def record(self, run: int, seconds: float) -> None:
        """One epoch of ``run`` finished in ``seconds`` (measured where it ran)."""
        self.clock.record(run, seconds)
        cost = self.clock.runs[run]
        units = cost.units / cost.epochs
        left = self.clock.seconds_left()
        with self._lock:
            before = self.units_done / self.total
            self.units_done += units
            share = self.units_done / self.total
            if left is not None and math.floor(share * 10 + 1e-6) > math.floor(before * 10 + 1e-6):
                elapsed = time.perf_counter() - self.start
                self.estimates.append(
                    {"done_share": round(share, 4), "elapsed": elapsed, "seconds_left": left}
                )
            self.bar.n = min(round(self.units_done), round(self.total))
            self.bar.set_postfix_str(format_seconds(left))

    def expect_retrain(self, run: int, costs: Sequence[RunCost], higher_is_better: bool) -> None:
        """The retrain is ``run`` of the clock; ``costs[i]`` its size if grid run ``i`` wins.

        Until a grid run has finished it is guessed at the mean size; then at the size
        of the best run so far (the likeliest choice)."""
        self._retrain = (run, list(costs), higher_is_better)

    def run_finished(self, index: int | None = None, score: float | None = None) -> None:
        """Grid run ``index`` finished with validation ``score``."""
        with self._lock:
            self.finished += 1
            self.bar.set_description_str(f"grid {self.finished}/{self.n_runs} runs")
        expected = self._retrain
        if expected is None or index is None or score is None:
            return
        run, costs, higher_is_better = expected
        key = score if higher_is_better else -score
        if self._best is None or key > self._best[0]:
            self._best = (key, index)
            self.retrain(run, costs[index], started=False)

    def retrain(self, run: int, cost: RunCost, started: bool = True) -> None:
        """The retrain's size: the chosen settings' (``started``), or the current leader's."""
        with self._lock:
            self.total += cost.units - self.clock.runs[run].units
            self.clock.replace(run, cost)
            self.bar.total = round(self.total)
            if started:
                self.bar.set_description_str("retrain on train + validation")

    def close(self) -> None:
        self.bar.close()
