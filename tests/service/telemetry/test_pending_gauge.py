"""The pending-decisions gauge is read from the store at most 1% of the time: a count
that takes long (a store holding millions of decisions) is read again later, not at
every pass of the maintenance loop."""

from __future__ import annotations

import asyncio
from pathlib import Path

import httpx
import pytest

from service.domain.runtime.api import PENDING_READ_SPACING
from service.main import create_app
from service.settings import load_settings

pytestmark = pytest.mark.anyio


async def test_a_slow_pending_count_is_read_again_only_after_its_spacing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    app = create_app(load_settings(data_dir=tmp_path))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            created = await http.put("/v1/models/m", json={"n_features": 2, "n_actions": 2})
            assert created.status_code == 201, created.text
            runtime = await app.state.registry.get("m")
            store = runtime.store
            counted = store.pending_count
            calls: list[str] = []

            async def slow_count(name: str) -> int:  # the store's own count, 20 ms late
                calls.append(name)
                await asyncio.sleep(0.02)
                return await counted(name)

            monkeypatch.setattr(store, "pending_count", slow_count)
            predicted = await http.post("/v1/models/m/predict", json={"context": [0.1, 0.2]})
            assert predicted.status_code == 200
            await runtime.refresh_gauges(1_000.0)
            assert calls == ["m"] and runtime.metrics.pending._value.get() == 1
            await runtime.refresh_gauges(1_000.0 + 0.02 * PENDING_READ_SPACING * 0.9)
            assert calls == ["m"]  # within 100 times the 20 ms it took: not read again
            await runtime.refresh_gauges(1_000.0 + 3_600.0)  # long after (the read took < 36 s)
            assert calls == ["m", "m"]
