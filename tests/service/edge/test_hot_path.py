"""The predict fast path answers exactly as the FastAPI route does, on a live server.

A body sent as ``application/json`` is answered in front of the router
(:mod:`service.edge`); the same body as ``application/vnd.test+json`` (JSON for
FastAPI, not for the fast path) goes through the route.  Both must give the same status,
the same refusal, the same decision fields, and both decisions must be stored.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import orjson
import pytest

from service.edge.serve import hot_route
from tests.service.live_server import LiveServer
from tests.service.metrics_read import ok_requests_reaching_sync


def predict_name(scope: dict[str, Any]) -> str | None:
    """The model name of a predict request the hot path can take, else None."""
    found = hot_route(scope)
    return found[1] if found is not None and found[0] == "predict" else None


FAST, ROUTE = "application/json", "application/vnd.test+json"
USER, ADMIN = "user-key", "admin-key"
BODIES: list[tuple[str, Any]] = [
    ("clf", {"context": [0.1, 0.2, 0.3]}),
    ("clf", {"contexts": [[0.1, 0.2, 0.3], [1.0, -1.0, 0.5]]}),
    ("reg", {"context": [0.1, 0.2, 0.3]}),
    ("clf", {"context": [0.1, 0.2]}),  # wrong length: the learner's 422
    ("clf", {"context": [0.1, "x", 0.3]}),
    ("clf", {"context": [0.1, 0.2, 0.3], "extra": 1}),
    ("clf", {"context": [0.1, 0.2, 0.3], "contexts": [[0.1, 0.2, 0.3]]}),
    ("clf", {"contexts": [[0.1, 0.2, 0.3]] * 5}),  # more than max_batch: 413
    ("clf", {"context": [0.1, 0.2, 0.3], "default_action": 7}),
    ("clf", {"context": [0.1, 0.2, 0.3], "default_action": 1}),
    ("clf", []),
    ("nope", {"context": [0.1, 0.2, 0.3]}),  # unknown model: 404
    ("bad name!", {"context": [0.1, 0.2, 0.3]}),
]
RAW_BODIES = [b"", b"{", b'{"context": [NaN, 1, 2]}', b'{"context": [1e999, 1, 2]}']


def _answer(server: LiveServer, name: str, body: bytes, content_type: str) -> tuple[int, Any]:
    with server.client(USER) as http:
        answer = http.post(
            f"/v1/models/{name}/predict", content=body, headers={"content-type": content_type}
        )
    data = answer.json()
    if answer.status_code == 200:  # event ids, actions and leaves are drawn: compare the fields
        rows = data.get("decisions", [data])
        return 200, [sorted(row) for row in rows]
    return answer.status_code, data


def test_fast_path_and_route_answer_alike(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    server = live_servers(
        {
            "BANDITREE_DATA_DIR": str(tmp_path / "data"),
            "BANDITREE_API_KEYS": USER,
            "BANDITREE_ADMIN_KEYS": ADMIN,
            "BANDITREE_MAX_BATCH": "4",
        }
    )
    with server.client(ADMIN) as http:
        http.put("/v1/models/clf", json={"n_features": 3, "n_actions": 4}).raise_for_status()
        http.put("/v1/models/reg", json={"task": "regression", "n_features": 3}).raise_for_status()
    cases = [(name, orjson.dumps(body)) for name, body in BODIES]
    cases += [("clf", raw) for raw in RAW_BODIES]
    statuses = set()
    for name, body in cases:
        fast = _answer(server, name, body, FAST)
        assert fast == _answer(server, name, body, ROUTE), (name, body)
        statuses.add(fast[0])
    assert statuses == {200, 404, 413, 422}
    with server.client(USER) as http:
        unauthorised = http.post(
            "/v1/models/clf/predict",
            json={"context": [0.1, 0.2, 0.3]},
            headers={"authorization": ""},
        )
        assert unauthorised.status_code == 401
        decision = http.post("/v1/models/clf/predict", json={"context": [0.1, 0.2, 0.3]}).json()
        feedback = http.post(
            "/v1/models/clf/feedback", json={"event_id": decision["event_id"], "loss": 0.5}
        )
        assert feedback.status_code == 200, feedback.text  # the decision was stored first

    def scrape() -> str:  # keys are set: /metrics needs an admin key
        return httpx.get(server.url + "/metrics", headers={"Authorization": f"Bearer {ADMIN}"}).text

    counted = ok_requests_reaching_sync(scrape, "/v1/models/{name}/predict", 7.0)
    assert counted is not None and counted >= 7.0


@pytest.mark.parametrize("content_type", [FAST, ROUTE])
def test_both_paths_store_the_decision(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path, content_type: str
) -> None:
    server = live_servers({"BANDITREE_DATA_DIR": str(tmp_path / "data")})
    with server.client() as http:
        http.put("/v1/models/m", json={"n_features": 2, "n_actions": 2}).raise_for_status()
        decisions = http.post(
            "/v1/models/m/predict",
            content=orjson.dumps({"contexts": [[0.0, 1.0], [1.0, 0.0]]}),
            headers={"content-type": content_type},
        ).json()["decisions"]
        for decision in decisions:
            answer = http.post(
                "/v1/models/m/feedback", json={"event_id": decision["event_id"], "loss": 1.0}
            )
            assert answer.status_code == 200, answer.text
        again = http.post(
            "/v1/models/m/feedback", json={"event_id": decisions[0]["event_id"], "loss": 1.0}
        )
        assert again.status_code == 409


def _scope(method: str, path: str, headers: dict[bytes, bytes]) -> dict[str, Any]:
    return {"type": "http", "method": method, "path": path, "headers": list(headers.items())}


JSON_HEADERS = {b"content-type": b"application/json", b"content-length": b"20"}


@pytest.mark.parametrize(
    ("method", "path", "headers", "taken"),
    [
        ("POST", "/v1/models/m-1.a_b/predict", JSON_HEADERS, "m-1.a_b"),
        ("POST", "/v1/models/m/predict", {**JSON_HEADERS, b"content-type": b"application/json; charset=utf-8"}, "m"),
        ("GET", "/v1/models/m/predict", JSON_HEADERS, None),
        ("POST", "/v1/models/m/feedback", JSON_HEADERS, None),
        ("POST", "/v1/models/-m/predict", JSON_HEADERS, None),  # not a model name
        ("POST", "/v1/models/m/predict/", JSON_HEADERS, None),
        ("POST", "/v1/models/m/predict", {b"content-type": b"application/json"}, None),  # chunked
        ("POST", "/v1/models/m/predict", {**JSON_HEADERS, b"transfer-encoding": b"chunked"}, None),
        ("POST", "/v1/models/m/predict", {**JSON_HEADERS, b"content-type": b"text/plain"}, None),
        ("POST", "/v1/models/m/predict", {b"content-length": b"20"}, None),
    ],
)  # fmt: skip
def test_which_requests_take_the_fast_path(
    method: str, path: str, headers: dict[bytes, bytes], taken: str | None
) -> None:
    assert predict_name(_scope(method, path, headers)) == taken
