"""``/docs`` and ``/redoc``: Swagger UI and ReDoc served from the installed package's own assets, never a CDN.

FastAPI's default page loads Swagger UI from a CDN, so it is blank on a machine without
internet.  The assets here (and ReDoc's) come from the ``fastapi-offline`` wheel (Swagger UI 5, which
reads the OpenAPI 3.1 document FastAPI writes), mounted under :data:`ASSETS_URL`.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from fastapi import FastAPI, Request
from fastapi.openapi.docs import (
    get_redoc_html,
    get_swagger_ui_html,
    get_swagger_ui_oauth2_redirect_html,
)
from fastapi.responses import HTMLResponse
from fastapi.staticfiles import StaticFiles

#: where the Swagger UI files are served
ASSETS_URL = "/docs-assets"
#: the files the page loads, all under :data:`ASSETS_URL`
ASSET_FILES = ("swagger-ui-bundle.js", "swagger-ui.css", "favicon.png", "redoc.standalone.js")


def assets_directory() -> Path:
    """The installed Swagger UI files (``swagger-ui-bundle.js``, ``swagger-ui.css``)."""
    return Path(str(files("fastapi_offline") / "static"))


def install_docs(app: FastAPI, docs_url: str = "/docs", redoc_url: str = "/redoc") -> None:
    """Serve Swagger UI at ``docs_url`` and ReDoc at ``redoc_url`` from local assets.

    Create the app with ``docs_url=None`` and ``redoc_url=None`` (FastAPI's own pages
    load their scripts from a CDN).
    """
    app.mount(ASSETS_URL, StaticFiles(directory=assets_directory()), name="docs-assets")
    redirect_url = app.swagger_ui_oauth2_redirect_url or f"{docs_url}/oauth2-redirect"

    @app.get(docs_url, include_in_schema=False)
    async def swagger_ui(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_swagger_ui_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - Swagger UI",
            oauth2_redirect_url=f"{root}{redirect_url}",
            swagger_js_url=f"{root}{ASSETS_URL}/swagger-ui-bundle.js",
            swagger_css_url=f"{root}{ASSETS_URL}/swagger-ui.css",
            swagger_favicon_url=f"{root}{ASSETS_URL}/favicon.png",
            swagger_ui_parameters=app.swagger_ui_parameters,
        )

    @app.get(redirect_url, include_in_schema=False)
    async def swagger_ui_redirect() -> HTMLResponse:
        return get_swagger_ui_oauth2_redirect_html()

    @app.get(redoc_url, include_in_schema=False)
    async def redoc(request: Request) -> HTMLResponse:
        root = request.scope.get("root_path", "")
        return get_redoc_html(
            openapi_url=f"{root}{app.openapi_url}",
            title=f"{app.title} - ReDoc",
            redoc_js_url=f"{root}{ASSETS_URL}/redoc.standalone.js",
            redoc_favicon_url=f"{root}{ASSETS_URL}/favicon.png",
            with_google_fonts=False,
        )
