"""What every root Personalizer route shares: the model a request is for, the version
segment, the error body and the run of an administration operation.

The model is the one the key is scoped to (``BANDITREE_SCOPED_KEYS`` with one model
name: Personalizer's key belonged to one resource), else the configured default
(``BANDITREE_PERSONALIZER_MODEL``, which the key must reach); when neither decides, a
400 says so.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from typing import Any

import orjson
from fastapi import Request
from fastapi.responses import JSONResponse, Response

from banditree.features import InvalidInput
from service.domain.errors import DomainError, InvalidRequest
from service.domain.jobs import Jobs
from service.domain.operations import SCOPE_STATE_KEY, visible
from service.domain.runtime import ModelRuntime
from service.http.errors import STORE_ERRORS, domain_status
from service.http.personalizer_errors import personalizer_error

#: the version segments Personalizer's clients put in their URLs
VERSION = re.compile(r"^v1\.\d+(?:-preview(?:\.\d+)?)?$")
#: the setting naming the model of a key that reaches several models
DEFAULT_SETTING = "BANDITREE_PERSONALIZER_MODEL"
_GLOB = re.compile(r"[*?\[]")


class PzRefusal(Exception):
    """A refusal answered in Personalizer's error body."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status, self.message = status, message


def pz_refusal(err: PzRefusal) -> JSONResponse:
    """Personalizer's error answer of ``err``."""
    return personalizer_error(err.status, err.message)


def resolve_model(request: Request) -> str:
    """The model a root Personalizer request is for; :class:`PzRefusal` when no model is
    decided (400) or the key does not reach the default model (403)."""
    patterns: tuple[str, ...] | None = getattr(request.state, SCOPE_STATE_KEY, None)
    if patterns is not None and len(patterns) == 1 and not _GLOB.search(patterns[0]):
        return patterns[0]
    default: str | None = request.app.state.settings.personalizer_model
    if default is not None:
        if not visible(patterns, default):
            raise PzRefusal(403, f"this key does not reach the default model {default!r}")
        return default
    reach = "every model" if patterns is None else f"the models {list(patterns)}"
    raise PzRefusal(
        400,
        f"no model for this request: the key reaches {reach} and {DEFAULT_SETTING} is not "
        "set; use a key scoped to one model (BANDITREE_SCOPED_KEYS), set "
        f"{DEFAULT_SETTING}, or use the endpoint {{server}}/v1/models/{{name}}",
    )


def check_version(api_version: str | None) -> None:
    """:class:`PzRefusal` (404) for a version segment no Personalizer client sends."""
    if api_version is not None and not VERSION.match(api_version):
        raise PzRefusal(
            404,
            f"no Personalizer API version {api_version!r}: the routes are "
            "/personalizer/{v1.N or v1.N-preview.M}/... or /personalizer/... with ?api-version",
        )


def jobs(request: Request) -> Jobs:
    """The process's job system (made by the app's lifespan)."""
    found: Jobs = request.app.state.jobs
    return found


def json_response(
    content: Any, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    """A JSON answer."""
    return Response(
        orjson.dumps(content), status_code=status, media_type="application/json", headers=headers
    )


async def read_body(request: Request) -> Any:
    """The request's JSON body; 400 when it is not JSON."""
    try:
        return orjson.loads(await request.body())
    except orjson.JSONDecodeError as err:
        raise InvalidRequest(f"body: not JSON ({err})", "body") from None


async def run_admin(
    request: Request, api_version: str | None, work: Callable[[ModelRuntime], Awaitable[Response]]
) -> Response:
    """Run ``work`` on the request's model; every refusal in Personalizer's error body."""
    try:
        check_version(api_version)
        runtime = await request.app.state.registry.get(resolve_model(request))
        return await work(runtime)
    except PzRefusal as err:
        return pz_refusal(err)
    except InvalidInput as err:
        return personalizer_error(400, str(err))
    except DomainError as err:
        return personalizer_error(domain_status(err), err.detail)
    except STORE_ERRORS:
        return personalizer_error(503, "the store cannot be reached now; try again")
