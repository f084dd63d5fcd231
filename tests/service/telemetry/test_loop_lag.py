"""``banditree_event_loop_lag_seconds``: a loop held up shows as lag, an idle loop does not."""

from __future__ import annotations

import asyncio
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from service.telemetry.loop_lag import watch_loop_lag
from service.telemetry.metrics import ServiceMetrics
from service.telemetry.metrics_render import ExpositionRenderer, registry_metrics


def _samples(metrics: ServiceMetrics) -> dict[str, float]:
    body = ExpositionRenderer(registry_metrics(metrics.registry)).render().decode()
    out: dict[str, float] = {}
    for family in text_string_to_metric_families(body):
        if family.name == "banditree_event_loop_lag_seconds":
            for s in family.samples:
                out[s.name + s.labels.get("le", "")] = s.value
    return out


@pytest.mark.anyio
async def test_a_blocked_loop_is_observed_as_lag() -> None:
    metrics = ServiceMetrics()
    watcher = asyncio.create_task(watch_loop_lag(metrics.loop_lag, interval=0.01))
    try:
        await asyncio.sleep(0.2)
        quiet = _samples(metrics)
        assert quiet["banditree_event_loop_lag_seconds_count"] >= 5
        time.sleep(0.3)  # the loop held, as a slow callback (or the GIL held elsewhere) does
        await asyncio.sleep(0.05)
        held = _samples(metrics)
    finally:
        watcher.cancel()
    late = "banditree_event_loop_lag_seconds_bucket"
    assert held[late + "0.25"] - quiet[late + "0.25"] < held[late + "+Inf"] - quiet[late + "+Inf"]
    assert (
        held["banditree_event_loop_lag_seconds_sum"] - quiet["banditree_event_loop_lag_seconds_sum"]
        >= 0.25
    )
