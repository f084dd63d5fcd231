"""``GET /v1/models/{name}/log``: the joined interaction log as NDJSON, streamed.

The store provides the rows through one method (see :class:`LogSource`); a store
without it answers 501.  Each line is one row in the wire form of
:func:`banditree.logs.log_row`, in offset order.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any, Protocol, runtime_checkable

import orjson
from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from service.deps import RuntimeDep
from service.errors import ServiceError

router = APIRouter(prefix="/v1/models", tags=["log"])

#: Most rows one request returns; a client pages on with ``since`` = the last offset.
MAX_LOG_LIMIT = 1_000_000


@runtime_checkable
class LogSource(Protocol):
    """A store that keeps the interaction log.

    ``read_log`` yields the rows of model ``name`` with ``since < offset <= until``
    (either bound may be None), in increasing offset order, at most ``limit`` of them,
    each a :func:`banditree.logs.log_row` dict.
    """

    def read_log(
        self, name: str, *, since: int | None, until: int | None, limit: int
    ) -> AsyncIterator[dict[str, Any]]: ...


@router.get(
    "/{name}/log",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/x-ndjson": {}}}},
)
async def export_log(
    runtime: RuntimeDep,
    since: Annotated[int | None, Query(ge=0, description="rows with offset above this")] = None,
    until: Annotated[int | None, Query(ge=0, description="rows with offset up to this")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LOG_LIMIT, description="most rows")] = 10_000,
) -> StreamingResponse:
    """The model's joined (decision, feedback) log rows as NDJSON, oldest first."""
    store = runtime.store
    if not isinstance(store, LogSource):
        raise ServiceError(
            501,
            f"the {type(store).__name__} keeps no interaction log, so there is nothing to export",
        )
    if since is not None and until is not None and until < since:
        raise ServiceError(422, f"until ({until}) must be >= since ({since})", "until")
    rows = store.read_log(runtime.name, since=since, until=until, limit=limit)
    try:  # the first row is read here, so an unreachable store is a 503, not a cut stream
        first = await anext(rows, None)
    except Exception:
        raise ServiceError(503, "the log store is unreachable; try again") from None

    async def lines() -> AsyncIterator[bytes]:
        if first is None:
            return
        yield orjson.dumps(first) + b"\n"
        async for row in rows:
            yield orjson.dumps(row) + b"\n"

    return StreamingResponse(lines(), media_type="application/x-ndjson")
