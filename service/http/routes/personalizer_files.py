"""Personalizer's model and log routes (``/personalizer[/{version}]``).

Mapped by :mod:`service.domain.personalizer.model_files`: the model export is a
banditree checkpoint (``application/octet-stream``), an import serves one of a model with
the same config, a reset serves a fresh model; the log's properties are its time range,
its deletion trims it after a checkpoint.  The REST client's inference-free logging
routes (``/logs/interactions``, ``/logs/observations``) are refused, naming why.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from fastapi import Request
from fastapi.responses import Response

from service.domain.errors import InvalidRequest
from service.domain.personalizer import model_files as files
from service.domain.personalizer.configuration import ranking_model
from service.domain.runtime import ModelRuntime
from service.http.routes.personalizer_resolve import json_response, run_admin

Endpoint = Callable[..., Awaitable[Response]]
#: most bytes of an imported model
MAX_IMPORT_BYTES = 256 * 1024 * 1024
#: what the inference-free logging routes take, and why banditree cannot read it
RL_CLIENT_FORMAT = (
    "takes the binary payloads of VW's reinforcement_learning client library, which "
    "banditree does not read: rank and reward through this API, or import a DSJson log "
    "(banditree import)"
)


async def export_model(request: Request, api_version: str | None = None) -> Response:
    """The served model as a banditree checkpoint (``signed=true`` is refused: banditree's
    export carries a checksum, not a signature)."""

    async def work(runtime: ModelRuntime) -> Response:
        signed = request.query_params.get("signed", "false").lower()
        if signed not in ("false", "0"):
            raise InvalidRequest(
                "signed: banditree exports a checksummed checkpoint, not a signed archive; "
                "ask with signed=false",
                "signed",
            )
        blob = await files.export_model(runtime)
        return Response(blob, media_type="application/octet-stream")

    return await run_admin(request, api_version, work)


async def import_model(request: Request, api_version: str | None = None) -> Response:
    """Serve an exported model of the same config (204)."""

    async def work(runtime: ModelRuntime) -> Response:
        blob = await request.body()
        if len(blob) > MAX_IMPORT_BYTES:
            raise InvalidRequest(f"body: more than {MAX_IMPORT_BYTES} bytes", "body")
        await files.import_model(runtime, blob)
        return Response(status_code=204)

    return await run_admin(request, api_version, work)


async def reset_model(request: Request, api_version: str | None = None) -> Response:
    """Serve a fresh model with the same config and explorer (204)."""

    async def work(runtime: ModelRuntime) -> Response:
        await files.reset_model(runtime)
        return Response(status_code=204)

    return await run_admin(request, api_version, work)


async def get_model_properties(request: Request, api_version: str | None = None) -> Response:
    """When the model was created and its served snapshot published."""

    async def work(runtime: ModelRuntime) -> Response:
        ranking_model(runtime.learner, runtime.name)
        record = request.app.state.registry.records.get(runtime.name)
        return json_response(files.model_properties(runtime, record))

    return await run_admin(request, api_version, work)


async def get_log_properties(request: Request, api_version: str | None = None) -> Response:
    """The time range of the log held."""

    async def work(runtime: ModelRuntime) -> Response:
        ranking_model(runtime.learner, runtime.name)
        return json_response(await files.log_properties(runtime))

    return await run_admin(request, api_version, work)


async def delete_logs(request: Request, api_version: str | None = None) -> Response:
    """Checkpoint, then trim the log up to that checkpoint (204)."""

    async def work(runtime: ModelRuntime) -> Response:
        ranking_model(runtime.learner, runtime.name)
        await files.delete_log(runtime)
        return Response(status_code=204)

    return await run_admin(request, api_version, work)


def _refused(route: str) -> Endpoint:
    async def refuse(request: Request, api_version: str | None = None) -> Response:
        async def work(runtime: ModelRuntime) -> Response:
            raise InvalidRequest(f"{route} {RL_CLIENT_FORMAT}", "body")

        return await run_admin(request, api_version, work)

    refuse.__name__ = f"refuse_{route.strip('/').replace('/', '_')}"
    refuse.__doc__ = f"Refused (400): {route} {RL_CLIENT_FORMAT}."
    return refuse


#: the routes that answer a file (``application/octet-stream``)
BINARY = frozenset({export_model})

ROUTES: list[tuple[str, str, Endpoint, int]] = [
    ("GET", "/model", export_model, 200),
    ("PUT", "/model", import_model, 204),
    ("DELETE", "/model", reset_model, 204),
    ("GET", "/model/properties", get_model_properties, 200),
    ("GET", "/logs/properties", get_log_properties, 200),
    ("DELETE", "/logs", delete_logs, 204),
    ("POST", "/logs/interactions", _refused("/logs/interactions"), 204),
    ("POST", "/logs/observations", _refused("/logs/observations"), 204),
]
