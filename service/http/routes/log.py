"""``GET /v1/models/{name}/log``: the joined interaction log as NDJSON, streamed.

Rows come from the model's feedback log (:meth:`service.store.Store.read_log`) in pages,
oldest first; each line is one row in the wire form of :func:`banditree.logs.log_row`.
A decision that expired is a row with ``source: "expired"`` and the model's default
loss; one that expired without a default loss taught nothing and is left out.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Annotated, Any

import orjson
from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from service.domain.runtime import ModelRuntime
from service.domain.runtime.replay import entry_row
from service.http.deps import RuntimeDep
from service.store import StoreUnavailable
from service.store.base import budget_seconds, store_budget

router = APIRouter(prefix="/v1/models", tags=["log"])

#: Most rows one request returns; a client pages on with ``since`` = the last offset.
MAX_LOG_LIMIT = 1_000_000
#: Largest ``since``/``until``: offsets are signed 64-bit integers in both stores.
MAX_OFFSET = 2**63 - 1
#: log entries read from the store per round trip
PAGE_ENTRIES = 1_000


async def _rows(
    runtime: ModelRuntime, since: int, until: int | None, limit: int
) -> AsyncIterator[dict[str, Any]]:
    after, left = since, limit
    each = budget_seconds()  # every page may wait as long as the first
    while left > 0:
        with store_budget(each):
            entries = await runtime.store.read_log(runtime.name, after=after, limit=PAGE_ENTRIES)
        for entry in entries:
            if until is not None and entry.offset > until:
                return
            row = entry_row(entry, runtime.uid, runtime.policy.default_loss)
            if row is not None:
                yield row
                left -= 1
                if left == 0:
                    return
        if len(entries) < PAGE_ENTRIES:
            return
        after = entries[-1].offset


@router.get(
    "/{name}/log",
    response_class=StreamingResponse,
    responses={200: {"content": {"application/x-ndjson": {}}}},
)
async def export_log(
    runtime: RuntimeDep,
    since: Annotated[
        int | None, Query(ge=0, le=MAX_OFFSET, description="rows with offset above this")
    ] = None,
    until: Annotated[
        int | None, Query(ge=0, le=MAX_OFFSET, description="rows with offset up to this")
    ] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LOG_LIMIT, description="most rows")] = 10_000,
    last: Annotated[
        int | None,
        Query(
            ge=1,
            le=MAX_LOG_LIMIT,
            description="only the newest entries: this many offsets back from the last",
        ),
    ] = None,
) -> StreamingResponse:
    """The model's joined (decision, feedback) log rows as NDJSON, oldest first.

    Rows with ``since < offset <= until``: an empty range (``until <= since``) is an
    empty answer.

    Entries the learner has folded into its oldest kept checkpoint are trimmed, so the
    log starts after that checkpoint's offset.  ``last`` keeps to the newest entries
    (offsets above the last one appended less ``last``; an expired decision without a
    default loss takes an offset and gives no row), what a console's recent view reads.
    """
    since = since or 0
    if last is not None:
        with store_budget(budget_seconds()):
            bounds = await runtime.store.log_bounds(runtime.name)
        since = max(since, bounds.last - last)
    rows = _rows(runtime, since, until, limit)
    # the first row is read here, so an unreachable store is a 503, not a cut stream
    first = await anext(rows, None)

    async def lines() -> AsyncIterator[bytes]:
        if first is None:
            return
        yield orjson.dumps(first) + b"\n"
        try:
            async for row in rows:
                yield orjson.dumps(row) + b"\n"
        except StoreUnavailable:
            return  # the client sees a short page and asks again from its last offset

    return StreamingResponse(lines(), media_type="application/x-ndjson")
