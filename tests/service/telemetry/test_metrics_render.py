"""The service's own exposition renderer writes what ``generate_latest`` writes."""

from __future__ import annotations

import gc
import time

import pytest
from prometheus_client import generate_latest
from prometheus_client.parser import text_string_to_metric_families

from service.telemetry.metrics import ServiceMetrics
from service.telemetry.metrics_render import _CHUNK, ExpositionRenderer, registry_metrics


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
    metrics = ServiceMetrics(max_model_series=2000)
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
    metrics = ServiceMetrics(max_model_series=2000)
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


def test_a_collection_during_a_rendering_walks_no_container_as_large_as_the_series() -> None:
    """A rendering keeps no container of one entry per series where the collector walks it.

    Every collection of the young generations, whichever thread sets it off, walks each
    young container's entries with the interpreter held; a dict or list of one entry per
    series, made anew by every rendering (140,000 with 10,000 models), held the event loop
    10 to 50 ms at each.  A collection here may meet one metric's list of children (one
    entry per model), never more.
    """
    models = 2000
    metrics = ServiceMetrics(max_model_series=2000)
    active(metrics, models)
    renderer = ExpositionRenderer(registry_metrics(metrics.registry))
    renderer.render()  # the caches are made once ...
    gc.collect()  # ... and are old by the next rendering, as in a serving process
    largest = 0
    collections = 0

    def watch(phase: str, info: dict[str, int]) -> None:
        nonlocal largest, collections
        if phase == "start" and info["generation"] < 2:
            collections += 1
            for generation in range(info["generation"] + 1):
                for obj in gc.get_objects(generation):
                    largest = max(largest, len(gc.get_referents(obj)))

    threshold = gc.get_threshold()
    gc.set_threshold(100, 10, 10)
    gc.callbacks.append(watch)
    made: list[list[list[int]]] = []
    try:
        for i in range(0, models, 7):  # some histograms change, so they are rendered anew
            metrics.for_model(f"m{i}").predict_latency.observe(0.002)
            # young containers kept, as a serving process makes meanwhile: collections run
            made.append([[i] for _ in range(30)])
        made.clear()
        text = renderer.render().decode()
    finally:
        gc.callbacks.remove(watch)
        gc.set_threshold(*threshold)
    series = len(samples(text))
    assert series > 60 * models
    assert collections > 10  # the rendering was watched
    assert largest <= models + 10, (largest, series)


def test_a_rendering_is_its_pieces_and_an_idle_one_copies_no_text() -> None:
    """``b"".join`` of the whole text held the interpreter at once (36-38 ms of CPU for the
    60 MB of 10,000 models), and so did appending the pieces to one growing buffer whenever
    ``realloc`` copied it to a new place (steps of 21-63 ms in the service): stalls of the
    event loop.  A rendering is the pieces as written, and an idle rendering's pieces are
    the very bytes of the last one: no text is copied."""
    metrics = ServiceMetrics(max_model_series=2000)
    active(metrics, 1000)
    renderer = ExpositionRenderer(registry_metrics(metrics.registry))
    first = renderer.exposition()
    again = renderer.exposition()
    assert isinstance(first.pieces, list) and len(first.pieces) > 2 * 1000 // _CHUNK
    assert first.size == len(bytes(first)) == sum(map(len, again.pieces))
    assert max(map(len, first.pieces)) < first.size / 20  # no piece is most of the text
    pairs = zip(first.pieces, again.pieces, strict=True)
    assert all(a is b for a, b in pairs if not a.startswith(b"# HELP"))
    assert bytes(again) == bytes(first) == renderer.render()
    assert samples(bytes(first).decode()) == samples(generate_latest(metrics.registry).decode())


def test_an_idle_rendering_writes_no_sample_again(monkeypatch: pytest.MonkeyPatch) -> None:
    """An idle model's lines are the last rendering's bytes, not written anew: a rendering
    of 10,000 idle models wrote 200,000 counter and gauge lines (0.33 s of the interpreter,
    every few seconds, the event loop's stalls).  A change writes its own piece again."""
    from service.telemetry import metrics_render

    # five pieces per metric: a change rewrites one of them, a full rewrite all five
    models = 5 * metrics_render._CHUNK
    metrics = ServiceMetrics(max_model_series=models)
    active(metrics, models)
    renderer = ExpositionRenderer(registry_metrics(metrics.registry))
    first = renderer.render()
    written: list[float] = []
    real_number = metrics_render.number

    def counted(value: float) -> str:
        written.append(value)
        return real_number(value)

    monkeypatch.setattr(metrics_render, "number", counted)
    assert renderer.render() == first
    assert written == []
    metrics.for_model("m7").mean_loss.set(123.5)
    metrics.for_model("m9").predictions.inc()
    text = renderer.render().decode()
    assert samples(text) == samples(generate_latest(metrics.registry).decode())
    assert 'banditree_progressive_mean_loss{model="m7"} 123.5\n' in text
    assert 0 < len(written) <= 2 * metrics_render._CHUNK
