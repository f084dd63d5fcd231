"""``/docs`` and ``/redoc`` load every script and style from the service itself, never a CDN."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest

from service.http.docs_page import ASSET_FILES, ASSETS_URL
from service.main import create_app
from service.settings import Settings

pytestmark = pytest.mark.anyio


@pytest.fixture
async def client(tmp_path: Path) -> AsyncIterator[httpx.AsyncClient]:
    settings = Settings(data_dir=tmp_path, api_keys=["app-key"], admin_keys=["admin-key"])
    app = create_app(settings)
    async with app.router.lifespan_context(app):
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://test") as http:
            yield http


def _references(html: str) -> list[str]:
    """Every URL the page loads: src/href attributes and the quoted URLs in its script."""
    found = re.findall(r"""(?:src|href)\s*=\s*["']([^"']+)["']""", html)
    found += re.findall(r"""url\s*:\s*['"]([^'"]+)['"]""", html)
    return found


@pytest.mark.parametrize("page", ["/docs", "/redoc"])
async def test_page_references_no_external_host(client: httpx.AsyncClient, page: str) -> None:
    answer = await client.get(page)  # open without a key, like /openapi.json
    assert answer.status_code == 200
    html = answer.text
    assert "://" not in html, re.findall(r"[a-z]+://[^\s'\"]+", html)
    references = _references(html)
    assert len(references) >= 2, (
        f"the page loads too little for the check to mean anything: {references}"
    )
    for url in references:
        assert url.startswith("/"), url
        assert (await client.get(url)).status_code == 200, url


async def test_assets_answer(client: httpx.AsyncClient) -> None:
    for name in ASSET_FILES:
        answer = await client.get(f"{ASSETS_URL}/{name}")
        assert answer.status_code == 200, name
        assert len(answer.content) > 1000, name
    bundle = (await client.get(f"{ASSETS_URL}/swagger-ui-bundle.js")).text
    assert "SwaggerUIBundle" in bundle
    assert (await client.get(f"{ASSETS_URL}/missing.js")).status_code == 404


async def test_docs_page_loads_the_openapi_document(client: httpx.AsyncClient) -> None:
    html = (await client.get("/docs")).text
    assert "'/openapi.json'" in html or '"/openapi.json"' in html
    assert (await client.get("/openapi.json")).json()["info"]["title"] == "banditree"
