"""A service in process holding one small model ``m``, for the route tests that read it."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

from service.main import create_app
from service.settings import load_settings

MODEL = {"kind": "dgt", "n_features": 3, "n_actions": 2, "height": 2, "accumulate": 1}


@asynccontextmanager
async def one_model_client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    """A client of a fresh service whose model ``m`` is :data:`MODEL`."""
    app = create_app(load_settings(data_dir=tmp_path, snapshot_poll_seconds=0.05))
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as client:
            assert (await client.put("/v1/models/m", json=MODEL)).status_code == 201
            yield client
