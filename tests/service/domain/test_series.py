"""The overview's figures from the service's own samples: rates, windowed loss, trend."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import Any

import pytest

from service.domain.series import RATE_SECONDS, SAMPLES, TREND_POINTS, ModelSeries

pytestmark = pytest.mark.anyio


@dataclass
class Model:
    """A served model's counters as a sample reads them."""

    decisions: int = 0
    feedback: int = 0
    loss_sum: float = 0.0
    counters: dict[str, Any] = field(default_factory=dict)

    def step(self, decisions: int, feedback: int, loss: float) -> None:
        self.decisions += decisions
        self.feedback += feedback
        self.loss_sum += feedback * loss
        mean = self.loss_sum / self.feedback if self.feedback else None
        self.counters = {"decisions": self.decisions, "feedback": self.feedback,
                         "progressive_mean_loss": mean}  # fmt: skip


def test_rates_and_loss_cover_the_last_minute_only() -> None:
    series, model = ModelSeries(), Model()
    model.step(0, 0, 0.0)
    series.sample({"m": model}, 0.0)
    assert series.figures("m") is None  # one sample: no rate yet
    for t in range(5, 301, 5):  # five minutes: 10 decisions/s, 4 feedbacks/s
        loss = 0.8 if t <= 240 else 0.2  # the last minute learns at a loss of 0.2
        model.step(50, 20, loss)
        series.sample({"m": model}, float(t))
    figures = series.figures("m")
    assert figures is not None and figures["seconds"] == RATE_SECONDS
    assert figures["decisions_per_second"] == pytest.approx(10.0)
    assert figures["feedback_per_second"] == pytest.approx(4.0)
    assert figures["window_loss"] == pytest.approx(0.2)
    trend = figures["loss_trend"]
    assert len(trend) == TREND_POINTS
    assert trend[0] == pytest.approx(0.8) and trend[-1] == pytest.approx(0.2)


def test_memory_is_one_fixed_ring_per_model_and_dropped_models_are_forgotten() -> None:
    series, model, idle = ModelSeries(), Model(), Model()
    for t in range(SAMPLES * 5):
        model.step(1, 1, 0.5)
        series.sample({"m": model, "idle": idle}, float(t))
    ring = series._rings["m"]
    assert ring.rows.shape == (SAMPLES, 4) and ring.count == SAMPLES * 5
    assert [r[0] for r in ring.ordered()] == [float(t) for t in range(SAMPLES * 4, SAMPLES * 5)]
    kept = series.figures("m")
    assert kept is series.figures("m")  # worked out once a sample, whoever reads them
    quiet = series.figures("idle")
    assert quiet is not None and quiet["feedback_per_second"] == 0.0
    assert quiet["window_loss"] is None and set(quiet["loss_trend"]) == {None}
    series.sample({"m": model}, float(SAMPLES * 5))
    assert len(series) == 1 and series.figures("idle") is None
    assert series.figures("m") is not kept


async def test_the_sampler_runs_until_cancelled() -> None:
    series, model = ModelSeries(), Model()
    model.step(3, 1, 0.25)
    task = asyncio.create_task(series.run(lambda: {"m": model}, every=0.01))
    for _ in range(200):
        if series._rings.get("m") is not None and series._rings["m"].count >= 3:
            break
        await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert series._rings["m"].count >= 3
