"""``/healthz`` (process alive) and ``/readyz`` (models loaded, store reachable)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import JSONResponse

from banditree import kernel
from service.http.deps import RegistryDep
from service.store import StoreFull

router = APIRouter(tags=["health"])


@router.get("/healthz")
async def healthz() -> dict[str, str]:
    """The process answers; ``kernel`` names the path that decides and learns.

    ``native`` (the compiled kernel) or ``reference`` (the numpy path, chosen with
    ``BANDITREE_KERNEL=reference``); a process whose kernel is missing never starts.
    """
    return {"status": "ok", "kernel": kernel.ACTIVE}


@router.get("/readyz")
async def readyz(registry: RegistryDep) -> JSONResponse:
    """``ready``; ``degraded`` (200) while the store is away but models are served from memory.

    503 until the models are restored, while the store is away and nothing is served,
    and while the store cannot write (its disk full, or under ``BANDITREE_MIN_FREE_BYTES``):
    a balancer should send the traffic elsewhere, as feedback cannot be taken.
    """
    try:
        await registry.store.ping()
    except StoreFull as err:
        body = {
            "status": "unavailable",
            "detail": f"the store cannot write: {err}; feedback gets 503",
            "field": None,
        }
        return JSONResponse(body, status_code=503, headers={"Retry-After": "1"})
    except Exception as err:
        if registry.runtimes:
            detail = f"store: {err}; predictions are answered unlogged, feedback gets 503"
            return JSONResponse(
                {"status": "degraded", "detail": detail, "models": len(registry.runtimes)}
            )
        body = {"status": "unavailable", "detail": f"store: {err}", "field": None}
        return JSONResponse(body, status_code=503, headers={"Retry-After": "1"})
    return JSONResponse({"status": "ready", "models": len(registry.records)})
