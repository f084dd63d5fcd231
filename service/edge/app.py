"""The service's ASGI front: the app, its one middleware, and the API-key checks.

:class:`ServiceApp` is FastAPI behind one outermost layer, :class:`ServiceHttp`, which
checks every HTTP request (API key, body bound), times, counts and logs it, answers the
hot paths (:class:`~service.edge.serve.HotPaths`) and hands the rest to FastAPI.

**API keys.**

Every ``/v1`` and root ``/personalizer`` call needs a configured key
(``Authorization: Bearer <key>``, or ``Ocp-Apim-Subscription-Key: <key>`` as
Personalizer's clients send it).  A key holds roles, on every model or on a set of them:

* ``predict``: predict and feedback; rank, reward and activate (the ranking and
  Personalizer routes);
* ``read``: the log export, the tree export, the checkpoint list, the per-leaf
  statistics and a context's trace;
* ``admin``: creating, deleting, checkpointing, rolling back and switching the mode of
  (``PATCH``) a model.

A root Personalizer route names no model: the route resolves it from the key's models
(:mod:`service.http.routes.personalizer_resolve`), so here it needs the role alone:
``predict`` to rank, reward and activate, ``read`` for its administration reads,
``admin`` for its administration writes.

Any role on a model reads its description (``GET /v1/models/{name}``); the model list
shows a key only the models it may reach.  ``BANDITREE_API_KEYS`` hold the roles of
``BANDITREE_API_KEY_ROLES`` (``predict`` alone by default: the key an application ships
with cannot export every model's raw contexts) on every model,
``BANDITREE_ADMIN_KEYS`` every role on every model, and ``BANDITREE_SCOPED_KEYS`` names
roles and models (exact names or ``fnmatch`` patterns) per key.  ``/metrics`` needs
``BANDITREE_METRICS_KEY`` or an admin key whenever any key is configured.  With no key
configured the service is open (a warning is logged at start).  This
runs in middleware (:class:`service.edge.app.ServiceHttp`) rather than as a
FastAPI dependency because dependency resolution costs more per request than a whole
decision on the predict path.
"""

from __future__ import annotations

import hmac
import json
import logging
import re
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from fastapi import FastAPI
from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from service.domain.operations import ROLES_STATE_KEY, SCOPE_STATE_KEY, visible
from service.edge.asgi_errors import send_json_error, send_personalizer_error
from service.edge.serve import HotPaths
from service.http.personalizer_errors import is_personalizer_path
from service.settings import ROLES, Settings
from service.store.base import enter_budget, leave_budget
from service.telemetry.metrics import ServiceMetrics

#: operations (method, path template) that need the admin role.  Writing a checkpoint
#: is one: retention keeps the newest ``checkpoint_keep`` versions, so checkpoints
#: written at will would push the admin's rollback targets out.
ADMIN_OPERATIONS = frozenset(
    {
        ("PUT", "/v1/models/{name}"),
        ("DELETE", "/v1/models/{name}"),
        ("POST", "/v1/models/{name}/rollback"),
        ("POST", "/v1/models/{name}/checkpoints"),
        ("PATCH", "/v1/models/{name}"),
        # an evaluation replays the log once per candidate on the service's CPU
        ("POST", "/v1/models/{name}/evaluations"),
        ("DELETE", "/v1/models/{name}/evaluations/{evaluation_id}"),
    }
)
#: (method, path template) -> role, for the operations on one model that are not admin
ROLE_OPERATIONS = {
    **dict.fromkeys(ADMIN_OPERATIONS, "admin"),
    ("POST", "/v1/models/{name}/predict"): "predict",
    ("POST", "/v1/models/{name}/feedback"): "predict",
    ("POST", "/v1/models/{name}/rank"): "predict",
    ("POST", "/v1/models/{name}/rank_multi_slot"): "predict",
    ("GET", "/v1/models/{name}/log"): "read",
    ("GET", "/v1/models/{name}/tree"): "read",
    ("GET", "/v1/models/{name}/checkpoints"): "read",
    ("GET", "/v1/models/{name}/leaves"): "read",
    ("GET", "/v1/models/{name}/drift"): "read",
    ("POST", "/v1/models/{name}/trace"): "read",
    ("GET", "/v1/models/{name}/evaluations"): "read",
    ("GET", "/v1/models/{name}/evaluations/{evaluation_id}"): "read",
    ("GET", "/v1/models/{name}/checkpoints/{sequence}/tree"): "read",
}
#: a model's routes one segment deeper than :data:`_MODEL_PATH` takes, by their template
_DEEPER_PATH = re.compile(
    r"^/v1/models/(?P<name>[^/]+)(?:/evaluations/(?P<evaluation>[^/]+)"
    r"|/checkpoints/(?P<sequence>[^/]+)/tree)/?$"
)
_MODEL_PATH = re.compile(r"^/v1/models/(?P<name>[^/]+)(?P<rest>/[^/]+)?/?$")
#: the deeper paths of a model that need the predict role: activation, multi-slot reward
#: and activation, and Personalizer's rank, reward and activate routes (single and
#: multi-slot)
_PREDICT_PATH = re.compile(
    r"^/v1/models/(?P<name>[^/]+)/(?:events/[^/]+/(?:activate|reward_multi_slot|"
    r"activate_multi_slot)|personalizer/(?:multislot/)?"
    r"(?:rank|events/[^/]+/(?:reward|activate)))/?$"
)


def root_role(method: str, path: str) -> str:
    """The role a root Personalizer route needs: ``predict`` to rank, reward and activate,
    ``read`` to read the administration routes, ``admin`` to change them."""
    if _ROOT_PREDICT.match(path):
        return "predict"
    return "read" if method == "GET" else "admin"


def root_refusal(roles: frozenset[str], role: str) -> tuple[int, str] | None:
    """403 when a key lacks the ``role`` a root Personalizer route needs."""
    if role not in roles:
        return 403, f"this route needs a key with the {role} role"
    return None


#: the root Personalizer routes that rank, reward and activate (with or without a version
#: segment); the other root routes are its administration API
_ROOT_PREDICT = re.compile(
    r"^/personalizer/(?:[^/]+/)?(?:multislot/)?(?:rank|events/[^/]+/(?:reward|activate))/?$"
)


@dataclass(frozen=True)
class KeyGrant:
    """One key's roles and the models they apply to (``None``: every model)."""

    key: bytes
    roles: frozenset[str]
    models: tuple[str, ...] | None

    def reaches(self, name: str) -> bool:
        """Whether the key's roles apply to model ``name``."""
        return visible(self.models, name)


def grants(settings: Settings) -> list[KeyGrant]:
    """Every configured key with its roles and models."""
    everything = frozenset(ROLES)
    app = frozenset(settings.api_key_roles)
    out = [KeyGrant(k.encode(), app, None) for k in settings.api_keys]
    out += [KeyGrant(k.encode(), everything, None) for k in settings.admin_keys]
    for scoped in settings.scoped_keys:
        models = None if "*" in scoped.models else tuple(scoped.models)
        out.append(KeyGrant(scoped.key.encode(), frozenset(scoped.roles), models))
    return out


def find_grant(key: bytes, candidates: list[KeyGrant]) -> KeyGrant | None:
    """The grant of ``key`` among ``candidates`` (compared in constant time), or None."""
    found = None
    for grant in candidates:  # compare against every key: no early exit on a match
        if hmac.compare_digest(key, grant.key):
            found = grant
    return found


def _operation(method: str, path: str) -> tuple[str | None, str | None]:
    """The model a ``/v1`` request is about and the role it needs (None: any role)."""
    match = _MODEL_PATH.match(path)
    if match is None and (deep := _DEEPER_PATH.match(path)) is not None:
        template = (
            "/v1/models/{name}/evaluations/{evaluation_id}"
            if deep["evaluation"] is not None
            else "/v1/models/{name}/checkpoints/{sequence}/tree"
        )
        return deep["name"], ROLE_OPERATIONS.get((method, template))
    if match is None:
        deeper = _PREDICT_PATH.match(path)
        return (deeper["name"], "predict") if deeper and method == "POST" else (None, None)
    template = "/v1/models/{name}" + (match["rest"] or "")
    return match["name"], ROLE_OPERATIONS.get((method, template))


class ApiKeyAuth:
    """Refuse with 401 (missing or unknown key) or 403 (the key lacks the role or model)."""

    def __init__(self, settings: Settings) -> None:
        self.grants = grants(settings)
        self.enabled = settings.auth_enabled
        self.metrics_grants = [g for g in self.grants if "admin" in g.roles and g.models is None]
        if settings.metrics_key:
            self.metrics_grants.append(
                KeyGrant(settings.metrics_key.encode(), frozenset({"metrics"}), None)
            )
        # every process-wide and per-model series names models and the lease holders'
        # hosts: behind a key whenever keys are configured
        self.metrics_protected = bool(settings.metrics_key) or settings.auth_enabled

    async def refused(self, scope: Scope, send: Send) -> bool:
        """Answer the refusal of an HTTP request that may not pass, returning True; else False."""
        refusal = self.refusal(scope)
        if refusal is None:
            return False
        await self.answer(scope, refusal, send)
        return True

    def refusal(self, scope: Scope) -> tuple[int, str] | None:
        """``(status, detail)`` of the refusal of an HTTP request that may not pass, else None."""
        path = scope["path"]
        if self.metrics_protected and path.rstrip("/") == "/metrics":
            return self._metrics_refusal(scope)
        if not self.enabled or not path.startswith(("/v1/", "/personalizer/")):
            return None
        return self._refusal(scope)

    @staticmethod
    async def answer(scope: Scope, refusal: tuple[int, str], send: Send) -> None:
        """Send the answer of a :meth:`refusal`."""
        status, detail = refusal
        headers = [(b"www-authenticate", b"Bearer")] if status == 401 else []
        if "/personalizer/" in scope["path"]:  # Personalizer's clients read its error shape
            await send_personalizer_error(send, status, detail, headers)
        else:
            await send_json_error(send, status, detail, "authorization", headers)

    def _bearer(self, scope: Scope) -> tuple[bytes | None, tuple[int, str] | None]:
        header = subscription = None
        for name, value in scope["headers"]:
            if name == b"authorization":
                header = value
            elif name == b"ocp-apim-subscription-key":  # Personalizer's clients
                subscription = value.strip()
        if header is None and subscription:
            return subscription, None
        if header is None:
            return None, (
                401,
                "missing API key: send 'Authorization: Bearer <key>' "
                "(or 'Ocp-Apim-Subscription-Key: <key>')",
            )
        scheme, _, key = header.partition(b" ")
        key = key.strip()
        if scheme.lower() != b"bearer" or not key:
            return None, (401, "the Authorization header must be 'Bearer <key>'")
        return key, None

    def _metrics_refusal(self, scope: Scope) -> tuple[int, str] | None:
        key, refusal = self._bearer(scope)
        if key is None:
            return refusal
        if find_grant(key, self.metrics_grants) is None:
            return 401, "unknown metrics key (BANDITREE_METRICS_KEY or an admin key)"
        return None

    def _refusal(self, scope: Scope) -> tuple[int, str] | None:
        key, refusal = self._bearer(scope)
        if key is None:
            return refusal
        grant = find_grant(key, self.grants)
        if grant is None:
            return 401, "unknown API key"
        state = scope.setdefault("state", {})
        state[ROLES_STATE_KEY] = grant.roles
        if grant.models is not None:
            state[SCOPE_STATE_KEY] = grant.models
        if scope["path"].startswith("/personalizer/"):  # the model is the route's to resolve
            return root_refusal(grant.roles, root_role(scope["method"], scope["path"]))
        name, role = _operation(scope["method"], scope["path"])
        if name is None:
            return None  # the list (filtered by the route) or an unknown path (404)
        if role == "admin" and "admin" not in grant.roles:
            return 403, "this route needs an admin key"
        if role is not None and role not in grant.roles:
            return 403, f"this route needs a key with the {role} role"
        if not grant.reaches(name):
            return 403, f"this key does not reach model {name!r}"
        return None


#: the access log (``BANDITREE_ACCESS_LOG``): one JSON line per request
access_log = logging.getLogger("banditree.access")


class ServiceHttp:
    """The service's one ASGI middleware: API keys, body size limit, metrics, access log.

    One layer instead of one per concern: each layer is a coroutine frame and often a
    wrapped ``send``/``receive`` per request.  In order: requests are timed and counted
    by route template, method and status; ``/v1`` calls are checked for API keys
    (:class:`~service.edge.app.ApiKeyAuth`); a body declared larger than
    ``max_body_bytes`` is answered 413 before routing, and a body without a declared
    length is counted as it streams in.  With ``access_log`` each request is logged
    as one JSON line on the ``banditree.access`` logger.  Each request waits on the store
    for at most ``store_budget_seconds`` in all (:mod:`service.store.base`).  With
    ``hot``, the predict and feedback requests it takes are answered by it
    (:mod:`service.edge.serve`) instead of ``app``.  It is the outermost layer of the
    service's app (:class:`~service.edge.app.ServiceApp`), in front of FastAPI.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        auth: ApiKeyAuth,
        metrics: ServiceMetrics,
        max_body_bytes: int,
        access_log: bool = False,
        store_budget_seconds: float | None = None,
        hot: HotPaths | None = None,
    ) -> None:
        self.app = app
        self.store_budget_seconds = store_budget_seconds
        self.hot = hot
        self.auth = auth
        self.metrics = metrics
        self.max_body_bytes = max_body_bytes
        self.access_log = access_log
        self._children: dict[tuple[str, str, int], tuple[Any, Any]] = {}

    def _series(self, route: str, method: str, status: int) -> tuple[Any, Any]:
        key = (route, method, status)
        series = self._children.get(key)
        if series is None:
            series = (
                self.metrics.http_requests.labels(route, method, str(status)),
                self.metrics.http_duration.labels(route, method),
            )
            self._children[key] = series
        return series

    def _too_large(self, size: str) -> str:
        return f"request body of {size} bytes exceeds max_body_bytes={self.max_body_bytes}"

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        status = 500
        template = "unmatched"

        async def send_with_status(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            refusal = self.auth.refusal(scope)
            if refusal is not None:
                await self.auth.answer(scope, refusal, send_with_status)
                return
            too_large, fits, json_body = _scan(scope["headers"], self.max_body_bytes)
            if too_large is not None:
                await self._refuse_too_large(scope, too_large, send_with_status)
                return
            limited = receive if fits else self._counting(receive)
            paths = self.hot
            hot = None if paths is None or not (fits and json_body) else paths.take_path(scope)
            budget = enter_budget(self.store_budget_seconds)  # as store_budget
            try:
                if paths is None or hot is None:
                    await self.app(scope, limited, send_with_status)
                else:
                    template, operation, name = hot
                    # answered with the server's own send; the status comes back
                    answered = await paths.serve(
                        scope, limited, send, operation, name, send_with_status
                    )
                    if answered is not None:
                        status = answered
            finally:
                leave_budget(budget)
        finally:
            elapsed_seconds = time.perf_counter() - started
            route = scope.get("route")  # None on the hot paths: no AttributeError raised
            if route is not None:
                template = getattr(route, "path", None) or template
            requests, duration = self._series(template, scope["method"], status)
            # applied once per loop tick
            self.metrics.tick.inc_observe(requests, 1.0, duration, elapsed_seconds)
            if self.access_log:
                _log_access(scope, status, elapsed_seconds)

    async def _refuse_too_large(self, scope: Scope, size: bytes, send: Send) -> None:
        """413 for a body declared ``size`` bytes long (or not a length at all)."""
        detail = self._too_large(size.decode())
        if is_personalizer_path(scope["path"]):  # its clients read its shape
            await send_personalizer_error(send, 413, detail)
        else:
            await send_json_error(send, 413, detail, "body")

    def _counting(self, receive: Receive) -> Receive:
        """A ``receive`` that counts the body as it streams in: 413 past the bound."""
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            received += len(message.get("body", b""))
            if received > self.max_body_bytes:
                raise HTTPException(413, self._too_large(f"more than {self.max_body_bytes}"))
            return message

        return limited_receive


def _scan(headers: Any, max_body_bytes: int) -> tuple[bytes | None, bool, bool]:
    """One pass over a request's headers: ``(too_large, fits, json_body)``.

    ``too_large`` is the first declared length that is not a length or passes
    ``max_body_bytes`` (answered 413), else None; ``fits`` whether only a fitting length
    is declared (no chunked body: the server reads no more than it), else the body is
    counted as it streams in; ``json_body`` whether the content type is
    ``application/json`` (the hot paths take only that).
    """
    declared = chunked = json_body = False
    for key, value in headers:
        if key == b"content-length":
            if not value.isdigit() or int(value) > max_body_bytes:
                return value, False, False
            declared = True
        elif key == b"content-type":
            json_body = value.partition(b";")[0].strip().lower() == b"application/json"
        elif key == b"transfer-encoding":
            chunked = True
    return None, declared and not chunked, json_body


def enable_access_log() -> None:
    """Send the access log's JSON lines to standard output (once per process)."""
    access_log.setLevel(logging.INFO)
    if not access_log.handlers:
        handler = logging.StreamHandler(sys.stdout)
        handler.setFormatter(logging.Formatter("%(message)s"))
        access_log.addHandler(handler)
        access_log.propagate = False


def _log_access(scope: Scope, status: int, elapsed_seconds: float) -> None:
    """One JSON line per request: time, method, path, status, duration, client address."""
    if not access_log.isEnabledFor(logging.INFO):
        return
    client = scope.get("client")
    record = {
        "time": round(time.time(), 6),
        "method": scope["method"],
        "path": scope["path"],
        "status": status,
        "duration_ms": round(elapsed_seconds * 1e3, 3),
        "client": f"{client[0]}:{client[1]}" if client else None,
    }
    access_log.info(json.dumps(record))


class ServiceApp(FastAPI):
    """A FastAPI app whose outermost ASGI layer is the service's front (:meth:`install_front`).

    FastAPI's own stack (its error and telemetry middleware, exception handlers, router)
    costs more per request than a decision, so the front runs before it: every HTTP
    request is checked (API key, body bound), timed, counted and logged there, the hot
    paths are answered there (:class:`~service.edge.serve.HotPaths`), and the rest goes
    on to FastAPI.  Lifespan events go to FastAPI directly.  It is still a FastAPI app
    (routes, ``state``, ``openapi()``, the docs), so every route stays documented.
    """

    _front: ServiceHttp | None = None
    #: edits the generated OpenAPI document once, before it is served (set by the factory)
    document_hook: Callable[[dict[str, Any]], None] | None = None

    def openapi(self) -> dict[str, Any]:
        """FastAPI's document, edited once by :attr:`document_hook`."""
        if self.openapi_schema is None and self.document_hook is not None:
            self.document_hook(super().openapi())
        return super().openapi()

    def install_front(
        self,
        *,
        auth: ApiKeyAuth,
        metrics: ServiceMetrics,
        max_body_bytes: int,
        access_log: bool,
        store_budget_seconds: float | None,
        hot: bool = True,
    ) -> None:
        """Put the front in front of FastAPI; with ``hot`` it answers predict, feedback and rank."""
        self._front = ServiceHttp(
            self._fastapi,
            auth=auth,
            metrics=metrics,
            max_body_bytes=max_body_bytes,
            access_log=access_log,
            store_budget_seconds=store_budget_seconds,
            hot=HotPaths(self.state, self._fastapi) if hot else None,
        )

    async def _fastapi(self, scope: Scope, receive: Receive, send: Send) -> None:
        """FastAPI's own handling of a request."""
        await super().__call__(scope, receive, send)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        front = self._front
        if front is None or scope["type"] != "http":
            await super().__call__(scope, receive, send)
            return
        scope["app"] = self  # as FastAPI sets it, for the answers given in front of it
        await front(scope, receive, send)
