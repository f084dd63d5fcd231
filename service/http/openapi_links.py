"""OpenAPI links: how the answer of one operation feeds the next.

``PUT /v1/models/{name}`` links to every operation on the model it created, and a
decision of ``predict`` links to its ``feedback``.  Clients and schema-driven test
tools (stateful runs) follow them.
"""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.routing import APIRoute


def _operation_ids(routers: list[APIRouter]) -> dict[tuple[str, str], str]:
    ids = {}
    for router in routers:
        for route in router.routes:
            if isinstance(route, APIRoute):
                for method in route.methods or ():
                    ids[(method, route.path)] = route.unique_id
    return ids


def _link(operation_id: str, **parameters: str) -> dict[str, Any]:
    return {"operationId": operation_id, "parameters": parameters}


def add_links(routers: list[APIRouter]) -> None:
    """Declare the links on the routes of ``routers`` (call before they are included)."""
    ids = _operation_ids(routers)
    model = "/v1/models/{name}"
    name = {"name": "$request.path.name"}
    after_create = {
        link: _link(ids[(method, path)], **name)
        for link, method, path in (
            ("getModel", "GET", model),
            ("deleteModel", "DELETE", model),
            ("predict", "POST", model + "/predict"),
            ("exportTree", "GET", model + "/tree"),
            ("checkpointNow", "POST", model + "/checkpoints"),
            ("listCheckpoints", "GET", model + "/checkpoints"),
        )
        if (method, path) in ids
    }
    feedback = {
        "feedback": {
            **_link(ids[("POST", model + "/feedback")], **name),
            "requestBody": {"event_id": "$response.body#/event_id", "loss": 0.0},
        }
    }
    for router in routers:
        for route in router.routes:
            if not isinstance(route, APIRoute):
                continue
            methods = route.methods or set()
            if "PUT" in methods and route.path == model:
                route.responses.setdefault(201, {})["links"] = after_create
            if "POST" in methods and route.path == model + "/predict":
                route.responses.setdefault(200, {})["links"] = feedback
