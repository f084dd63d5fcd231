"""``fleet_start`` reads the idle learners' passes between two scrapes of the histogram."""

from __future__ import annotations

from benchmarks.scale.fleet_start import pass_figures


def test_passes_between_two_reads_give_count_mean_and_the_bound_of_the_longest() -> None:
    before = {"count": 10.0, "sum": 0.5, "le 0.01": 4.0, "le 0.03": 9.0, "le 0.1": 10.0,
              "le +Inf": 10.0, "learners": 10000.0}  # fmt: skip
    after = {"count": 30.0, "sum": 0.7, "le 0.01": 20.0, "le 0.03": 28.0, "le 0.1": 30.0,
             "le +Inf": 30.0, "learners": 1300.0}  # fmt: skip
    assert pass_figures(before, after) == {
        "passes": 20, "mean_ms": 10.0, "longest_at_most_s": 0.1, "learners_last_pass": 1300,
    }  # fmt: skip
    none = pass_figures(after, after)
    assert none["passes"] == 0 and none["mean_ms"] is None
