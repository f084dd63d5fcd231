"""``banditree train``'s work units and time-left estimate (the mechanism, not timings)."""

from __future__ import annotations

import pytest

from banditree.datasets import Dataset, load
from banditree.supervised.config import TrainingConfig
from banditree.supervised.progress import (
    OVERHEAD_MACS,
    GridProgress,
    RunCost,
    TimeLeft,
    format_seconds,
    row_macs,
)
from banditree.supervised.protocol import ProtocolOptions, run_protocol


def test_row_macs_count_layers_path_and_leaves() -> None:
    plain = TrainingConfig(height=2)
    # (d + 1) x 3 nodes, 3 nodes x 4 leaves path scores, 4 leaves x K outputs
    assert row_macs(plain, n_features=5, n_outputs=2) == 6 * 3 + 3 * 4 + 4 * 2
    wide = TrainingConfig(height=2, hidden="table12")  # [240, 240] then 3 nodes
    assert row_macs(wide, 5, 2) == 6 * 240 + 240 * 240 + 240 * 3 + 3 * 4 + 4 * 2


def test_an_overparameterized_run_weighs_more_units_than_a_plain_one() -> None:
    plain = RunCost.of(TrainingConfig(height=6, epochs=10), 1000, 16, 10)
    wide = RunCost.of(TrainingConfig(height=6, epochs=10, hidden="table12"), 1000, 16, 10)
    assert plain.batches == wide.batches == 8 * 10
    assert plain.units == pytest.approx(80 * (1 + plain.macs_per_batch / OVERHEAD_MACS))
    assert wide.units > 20 * plain.units  # a run count would weigh them the same


def _simulate(clock: TimeLeft, run: int, epochs: int, a: float, b: float) -> None:
    cost = clock.runs[run]
    for _ in range(epochs):
        clock.record(run, cost.batches_per_epoch * (a + b * cost.macs_per_batch))


def test_remaining_runs_are_weighted_by_their_size_from_measured_epochs() -> None:
    small = RunCost(batches_per_epoch=10, epochs=4, macs_per_batch=1e5)
    large = RunCost(batches_per_epoch=30, epochs=8, macs_per_batch=2e8)
    clock = TimeLeft([small, small, large])
    assert clock.seconds_left() is None  # nothing measured yet
    b = 1e-9
    a = b * OVERHEAD_MACS  # a machine whose step overhead matches the prior ratio
    _simulate(clock, 0, 4, a, b)
    _simulate(clock, 1, 4, a, b)
    truth = large.batches * (a + b * large.macs_per_batch)
    assert clock.seconds_left() == pytest.approx(truth)
    # the large run's own pace takes over once it has run an epoch (here: 2x slower)
    clock.record(2, 2 * large.batches_per_epoch * (a + b * large.macs_per_batch))
    assert clock.seconds_left() == pytest.approx(2 * truth * 7 / 8)


def test_a_runs_first_epoch_does_not_set_its_pace() -> None:
    run = RunCost(10, 5, 1e5)
    clock = TimeLeft([run])
    clock.record(0, 3.0)  # start-up and warm-up
    assert clock.seconds_left() == pytest.approx(4 * 3.0)  # all there is so far
    clock.record(0, 1.0)
    assert clock.seconds_left() == pytest.approx(3 * 1.0)


def test_both_costs_are_refitted_when_runs_of_different_size_were_measured() -> None:
    runs = [
        RunCost(10, 5, 1e5),
        RunCost(10, 5, 5e8),
        RunCost(20, 10, 2e8),  # not started: predicted from the fit
    ]
    clock = TimeLeft(runs)
    a, b = 0.004, 3e-10  # overhead 13x the prior ratio: the prior alone would be off
    _simulate(clock, 0, 5, a, b)
    _simulate(clock, 1, 5, a, b)
    fitted = clock.per_batch_model()
    assert fitted is not None and fitted == pytest.approx((a, b))
    assert clock.seconds_left() == pytest.approx(200 * (a + b * 2e8))


def test_parallel_lanes_share_the_grid_and_the_retrain_runs_alone() -> None:
    run = RunCost(10, 10, 1e6)
    clock = TimeLeft([run, run, run, run], lanes=2)
    b = 1e-9
    a = b * OVERHEAD_MACS
    _simulate(clock, 0, 10, a, b)
    _simulate(clock, 1, 10, a, b)
    per_run = 100 * (a + b * 1e6)
    assert clock.seconds_left() == pytest.approx(per_run)  # two runs left on two lanes
    retrain = clock.add(RunCost(20, 10, 1e6), serial=True)
    assert clock.seconds_left() == pytest.approx(per_run + 2 * per_run)
    clock.replace(retrain, RunCost(20, 10, 3e6))  # the chosen settings cost more per batch
    assert clock.seconds_left() == pytest.approx(per_run + 200 * (a + b * 3e6))


def test_the_protocol_reports_its_estimates_over_the_work() -> None:
    full = load("segmentation")
    ds = Dataset("seg", full.task, full.X_train[:300], full.y_train[:300], full.X_test, full.y_test)
    grid = [{"momentum": 0.0}, {"momentum": 0.3, "hidden": [8]}]
    report = run_protocol(
        ds, ProtocolOptions(height=2, epochs=10, grid=grid, progress=False)
    ).report
    estimates = report["time_left_estimates"]
    elapsed = [e["elapsed"] for e in estimates]
    assert elapsed == sorted(elapsed)
    assert estimates[-1]["done_share"] == pytest.approx(1.0)  # every unit counted once
    assert len(estimates) >= 9  # one at every tenth of the work units
    assert estimates[-1]["seconds_left"] == 0.0
    assert all(e["seconds_left"] >= 0 for e in estimates)


def test_format_seconds() -> None:
    assert format_seconds(None) == "time left: estimating..."
    assert format_seconds(42.4) == "about 42 s left"
    assert format_seconds(200) == "about 3 min 20 s left"
    assert format_seconds(3 * 3600 + 65) == "about 3 h 01 min left"


def test_the_retrain_is_expected_at_the_size_of_the_best_run_so_far() -> None:
    small, large = RunCost(10, 4, 1e5), RunCost(10, 4, 5e8)
    clock = TimeLeft([small, large])
    retrain = clock.add(RunCost(12, 4, (1e5 + 5e8) / 2), serial=True)  # the mean: a guess
    progress = GridProgress(clock, show=False, start=0.0, n_runs=2)
    sizes = [RunCost(12, 4, 1e5), RunCost(12, 4, 5e8)]
    progress.expect_retrain(retrain, sizes, higher_is_better=True)
    progress.run_finished(1, 0.70)
    assert clock.runs[retrain] == sizes[1]
    assert progress.total == pytest.approx(small.units + large.units + sizes[1].units)
    progress.run_finished(0, 0.90)  # the small run now leads
    assert clock.runs[retrain] == sizes[0]
    assert progress.total == pytest.approx(small.units + large.units + sizes[0].units)
