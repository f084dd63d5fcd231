"""The service's own exposition renderer writes what ``generate_latest`` writes."""

from __future__ import annotations

import time

from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from service.metrics import ServiceMetrics
from service.metrics_render import ExpositionRenderer, registry_metrics


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    out = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if not sample.name.endswith("_created"):
                out[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
    return out


def active(metrics: ServiceMetrics, models: int) -> None:
    for i in range(models):
        m = metrics.for_model(f"m{i}")
        m.predictions.inc(i)
        m.feedback["applied"].inc(2)
        m.predict_latency.observe(0.001 * (i + 1))
        m.staleness.observe(0.0)
        m.mean_loss.set(0.25 * i)
        m.set_lease_holder(f'host "{i}"\\:1')
    metrics.models_loaded.set(models)
    metrics.http_requests.labels("/v1/models/{name}/predict", "POST", "200").inc()
    metrics.http_duration.labels("/v1/models/{name}/predict", "POST").observe(0.002)


def test_the_same_samples_as_generate_latest_and_cached_histograms_follow_changes() -> None:
    metrics = ServiceMetrics()
    active(metrics, 30)
    renderer = ExpositionRenderer(registry_metrics(metrics.registry))
    first = renderer.render().decode()
    assert samples(first) == samples(generate_latest(metrics.registry).decode())
    assert len(samples(first)) > 30 * 60
    # a cached histogram picks up a new observation, even of 0, and deleted models go
    metrics.for_model("m3").predict_latency.observe(0.0)
    metrics.for_model("m4").update_latency.observe(2.0)
    metrics.forget_model("m5")
    second = renderer.render().decode()
    assert samples(second) == samples(generate_latest(metrics.registry).decode())
    assert 'model="m5"' not in second


def test_an_idle_model_costs_little() -> None:
    metrics = ServiceMetrics()
    active(metrics, 2000)
    renderer = ExpositionRenderer(registry_metrics(metrics.registry))
    started = time.perf_counter()
    renderer.render()
    first = time.perf_counter() - started
    started = time.perf_counter()
    renderer.render()
    again = time.perf_counter() - started
    started = time.perf_counter()
    generate_latest(metrics.registry)
    baseline = time.perf_counter() - started
    assert first < 0.5 * baseline and again < 0.5 * baseline, (first, again, baseline)
