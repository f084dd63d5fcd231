"""``/metrics``: Prometheus text format."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from banditree.learners import Apprentice
from service.deps import MetricsDep, RegistryDep

router = APIRouter(tags=["metrics"])


@router.get("/metrics", response_class=Response)
async def metrics(registry: RegistryDep, service_metrics: MetricsDep) -> Response:
    """Every metric of this process."""
    await registry.refresh_gauges()
    for name, runtime in list(registry.runtimes.items()):
        learner = runtime.learner
        if isinstance(learner, Apprentice):
            figures = learner.agreement()
            for key, series in (
                ("recent_agreement_rate", service_metrics.apprentice_agreement.labels(name)),
                (
                    "estimated_reward",
                    service_metrics.apprentice_reward_estimate.labels(name, "own"),
                ),
                (
                    "default_estimated_reward",
                    service_metrics.apprentice_reward_estimate.labels(name, "default"),
                ),
            ):
                value = figures[key]
                series.set(float("nan") if value is None else float(value))
    return Response(generate_latest(service_metrics.registry), media_type=CONTENT_TYPE_LATEST)
