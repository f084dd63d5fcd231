"""``/ui``: the console's files (:mod:`banditree_console`), served from the package, never a CDN.

The files hold no data: every figure the console shows comes from the public ``/v1``
routes, which check the key the person gives the console (kept in the browser tab) as
they check any client's.  So the page itself is served without a key, as ``/docs`` is,
and an app key sees read-only pages of the models it may read while an admin key may
change things.
"""

from __future__ import annotations

from fastapi import FastAPI
from fastapi.responses import RedirectResponse
from fastapi.staticfiles import StaticFiles

from banditree_console import assets_directory

#: where the console is served
CONSOLE_URL = "/ui"


def install_console(app: FastAPI) -> None:
    """Serve the console at ``/ui/`` (``/ui`` redirects there)."""

    @app.get(CONSOLE_URL, include_in_schema=False)
    async def console_root() -> RedirectResponse:
        return RedirectResponse(f"{CONSOLE_URL}/")

    app.mount(
        f"{CONSOLE_URL}/", StaticFiles(directory=assets_directory(), html=True), name="console"
    )
