"""``/metrics``: Prometheus text format."""

from __future__ import annotations

from fastapi import APIRouter, Response
from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

from service.deps import MetricsDep, RegistryDep

router = APIRouter(tags=["metrics"])


@router.get("/metrics", response_class=Response)
async def metrics(registry: RegistryDep, service_metrics: MetricsDep) -> Response:
    """Every metric of this process."""
    await registry.refresh_gauges()
    return Response(generate_latest(service_metrics.registry), media_type=CONTENT_TYPE_LATEST)
