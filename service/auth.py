"""API-key checks, run by the service's one ASGI middleware before routing.

Every ``/v1`` call needs a configured key (``Authorization: Bearer <key>``); creating,
deleting, checkpointing, rolling back and switching the mode of (``PATCH``) a model
need an admin key.  With no key
configured the service is open (a warning is logged at start).  This runs in middleware
(:class:`service.http_middleware.ServiceHttp`) rather than as a FastAPI dependency
because dependency resolution costs more per request than a whole decision on the
predict path.
"""

from __future__ import annotations

import hmac
import re

from starlette.types import Scope, Send

from service.asgi_errors import send_json_error
from service.settings import Settings

#: operations (method, path template) that need an admin key.  Writing a checkpoint is
#: one: retention keeps the newest ``checkpoint_keep`` versions, so checkpoints written
#: at will would push the admin's rollback targets out.
ADMIN_OPERATIONS = frozenset(
    {
        ("PUT", "/v1/models/{name}"),
        ("DELETE", "/v1/models/{name}"),
        ("POST", "/v1/models/{name}/rollback"),
        ("POST", "/v1/models/{name}/checkpoints"),
        ("PATCH", "/v1/models/{name}"),
    }
)
_ADMIN_ROUTES = tuple(
    (method, re.compile("^" + path.replace("{name}", "[^/]+") + "/?$"))
    for method, path in sorted(ADMIN_OPERATIONS)
)


def _known(key: bytes, keys: list[bytes]) -> bool:
    found = False
    for candidate in keys:  # compare against every key: no early exit on a match
        found |= hmac.compare_digest(key, candidate)
    return found


class ApiKeyAuth:
    """Refuse with 401 (missing or unknown key) or 403 (admin route, non-admin key)."""

    def __init__(self, settings: Settings) -> None:
        self.admin_keys = [k.encode() for k in settings.admin_keys]
        self.all_keys = [k.encode() for k in settings.api_keys] + self.admin_keys
        self.enabled = settings.auth_enabled

    async def refused(self, scope: Scope, send: Send) -> bool:
        """Answer the refusal of an HTTP request that may not pass, returning True; else False."""
        if not self.enabled or not scope["path"].startswith("/v1/"):
            return False
        refusal = self._refusal(scope)
        if refusal is None:
            return False
        status, detail = refusal
        headers = [(b"www-authenticate", b"Bearer")] if status == 401 else []
        await send_json_error(send, status, detail, "authorization", headers)
        return True

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        header = next((v for k, v in scope["headers"] if k == b"authorization"), None)
        if header is None:
            return 401, "missing API key: send 'Authorization: Bearer <key>'"
        scheme, _, key = header.partition(b" ")
        key = key.strip()
        if scheme.lower() != b"bearer" or not key:
            return 401, "the Authorization header must be 'Bearer <key>'"
        if not _known(key, self.all_keys):
            return 401, "unknown API key"
        method, path = scope["method"], scope["path"]
        if any(method == m and p.match(path) for m, p in _ADMIN_ROUTES):
            if not _known(key, self.admin_keys):
                return 403, "this route needs an admin key"
        return None
