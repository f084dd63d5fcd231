"""Per-model series for at most ``max_model_series`` models; the others add up."""

from __future__ import annotations

from prometheus_client import generate_latest

from service.telemetry.metrics import OTHER_MODELS, ServiceMetrics


def test_models_past_the_limit_add_up_under_one_label() -> None:
    metrics = ServiceMetrics(max_model_series=2)
    own = [metrics.for_model(name) for name in ("a", "b")]
    past = [metrics.for_model(name) for name in ("c", "d")]
    for children in own + past:
        children.predictions.inc(3)
        children.feedback["applied"].inc()
        children.version.set(7)
        children.update_latency.observe(0.001)
        children.set_lease_holder("h")
    assert metrics.for_model("a") is own[0]  # bound once per name
    page = generate_latest(metrics.registry).decode()
    assert 'banditree_predictions_total{model="a"} 3.0' in page
    assert f'banditree_predictions_total{{model="{OTHER_MODELS}"}} 6.0' in page
    assert f'banditree_feedback_total{{model="{OTHER_MODELS}",outcome="applied"}} 2.0' in page
    assert f'banditree_update_latency_seconds_count{{model="{OTHER_MODELS}"}} 2.0' in page
    assert 'model="c"' not in page and 'model="d"' not in page
    # gauges of the models past the limit are not exported (a sum of versions means nothing)
    assert f'banditree_model_version{{model="{OTHER_MODELS}"}}' not in page
    assert 'banditree_model_version{model="b"} 7.0' in page
    assert page.count("banditree_learner_lease_holder{") == 2


def test_a_forgotten_model_frees_its_place() -> None:
    metrics = ServiceMetrics(max_model_series=1)
    metrics.for_model("a").predictions.inc()
    metrics.for_model("b").predictions.inc()
    assert not metrics.has_series("b")
    metrics.forget_model("a")
    metrics.forget_model("b")  # counted in the shared series: nothing to drop
    metrics.for_model("c").predictions.inc()
    assert metrics.has_series("c")
    page = generate_latest(metrics.registry).decode()
    assert 'model="a"' not in page
    assert f'banditree_predictions_total{{model="{OTHER_MODELS}"}} 1.0' in page
