"""``/healthz`` (process alive) and ``/readyz`` (models loaded, store reachable)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from service.http.deps import RegistryDep

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process answers."""
    return {"status": "ok"}


@router.get("/readyz")
async def readyz(registry: RegistryDep) -> JSONResponse:
    """``ready``; ``degraded`` (200) while the store is away but models are served from memory.

    503 until the models are restored, or while the store is away and nothing is served.
    """
    try:
        await registry.store.ping()
    except Exception as err:
        if registry.runtimes:
            detail = f"store: {err}; predictions are answered unlogged, feedback gets 503"
            return JSONResponse(
                {"status": "degraded", "detail": detail, "models": len(registry.runtimes)}
            )
        body = {"status": "unavailable", "detail": f"store: {err}", "field": None}
        return JSONResponse(body, status_code=503, headers={"Retry-After": "1"})
    return JSONResponse({"status": "ready", "models": len(registry.runtimes)})
