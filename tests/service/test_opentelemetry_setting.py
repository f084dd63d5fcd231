"""FastAPI's native OpenTelemetry is off unless ``BANDITREE_OPENTELEMETRY`` asks for it.

Off, a request does not look up the global OpenTelemetry providers (a few microseconds
per request, with none configured); on, FastAPI checks them on every request.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest
from opentelemetry import trace

from service.main import create_app
from service.settings import load_settings

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("enabled", [False, True])
async def test_requests_look_up_the_tracer_provider_only_when_enabled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, enabled: bool
) -> None:
    lookups = []
    original = trace.get_tracer_provider

    def counted() -> Any:
        lookups.append(1)
        return original()

    app = create_app(load_settings(data_dir=tmp_path, opentelemetry=enabled))
    async with app.router.lifespan_context(app):
        monkeypatch.setattr(trace, "get_tracer_provider", counted)
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            for _ in range(3):
                assert (await http.get("/healthz")).status_code == 200
    assert (len(lookups) >= 3) is enabled, lookups
