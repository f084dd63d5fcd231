"""Each hostile input of the hardening table, reproduced against a live server.

Deep ``options``, loose coercion, a tree export of a large model, many models, a
non-admin key pushing rollback targets out, answers that do not match the OpenAPI
document, and connections that never finish their headers.  The rows that need a Redis
of the test's own are elsewhere: rows 2, 3, 4 and 10 (a Redis killed, then frozen) in
``test_redis_outage.py`` and ``test_e2e_redis_outage.py``, row 5 (a Redis that comes
back empty) in ``test_e2e_redis_data_loss.py``.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.service.live_server import ROOT, LiveServer, free_port

ADMIN, USER = "table-admin", "table-user"
MAX_MODELS = 6
SMALL = {"kind": "dgt", "n_features": 4, "n_actions": 3, "height": 3, "accumulate": 1}
ERROR_KEYS = {"detail", "field"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("table")
    live = LiveServer(
        {
            "BANDITREE_DATA_DIR": str(root / "data"),
            "BANDITREE_API_KEYS": USER,
            "BANDITREE_ADMIN_KEYS": ADMIN,
            "BANDITREE_MAX_MODELS": str(MAX_MODELS),
            "BANDITREE_MAX_EXPORT_BYTES": "200000",
            "BANDITREE_CHECKPOINT_KEEP": "3",
        },
        log_path=root / "server.log",
    )
    yield live
    live.stop(signal.SIGKILL)


@pytest.fixture
def admin(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client(ADMIN) as http:
        yield http


@pytest.fixture
def user(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client(USER) as http:
        yield http


def assert_error(answer: httpx.Response, status: int, field: str | None, text: str) -> None:
    """``answer`` is ``status`` in the one error model, naming ``field`` and saying ``text``."""
    assert answer.status_code == status, answer.text
    body: dict[str, Any] = answer.json()
    assert ERROR_KEYS <= set(body) and isinstance(body["detail"], str), body
    assert body["field"] == field, body
    assert text in body["detail"], body


def nested(depth: int) -> str:
    return "[" * depth + "]" * depth


def test_row1_deep_options_are_refused_naming_options(admin: httpx.Client) -> None:
    for depth in (9, 255, 900):
        raw = f'{{"kind":"dgt","n_features":4,"n_actions":3,"height":3,"options":{{"x":{nested(depth)}}}}}'
        answer = admin.put(
            "/v1/models/deep", content=raw, headers={"content-type": "application/json"}
        )
        assert_error(answer, 422, "options", "nesting deeper than 8 levels")
    raw = f'{{"kind":"dgt","n_features":4,"n_actions":3,"options":{{"x":{nested(20000)}}}}}'
    too_deep = admin.put(
        "/v1/models/deep", content=raw, headers={"content-type": "application/json"}
    )
    assert too_deep.status_code in (400, 422) and ERROR_KEYS <= set(too_deep.json())
    big = admin.put("/v1/models/deep", json={**SMALL, "options": {"x": "a" * 20000}})
    assert_error(big, 422, "options", "more than 16384")
    assert admin.get("/v1/models").status_code == 200
    assert admin.get("/v1/models/deep").status_code == 404  # nothing was stored


@pytest.mark.parametrize("value", [True, "4", 4.0])
def test_row9_integers_are_not_coerced(admin: httpx.Client, value: object) -> None:
    answer = admin.put("/v1/models/loose", json={**SMALL, "n_features": value})
    assert_error(answer, 422, "n_features", "valid integer")


def test_row9_rollback_version_false_is_refused(admin: httpx.Client) -> None:
    admin.put("/v1/models/rb", json=SMALL).raise_for_status()
    version_before = admin.get("/v1/models/rb").json()["version"]
    for value in (False, True, "0", 0.0):
        answer = admin.post("/v1/models/rb/rollback", json={"version": value})
        assert_error(answer, 422, "version", "valid integer")
    # at most the learner's own initial and caught-up checkpoints: four rollbacks add four
    stored = admin.get("/v1/models/rb/checkpoints").json()["checkpoints"]
    assert len(stored) <= 2, stored
    assert all(c["version"] == 0 for c in stored)
    assert admin.get("/v1/models/rb").json()["version"] == version_before


def test_row8_non_admin_checkpoints_cannot_push_rollback_targets_out(
    admin: httpx.Client, user: httpx.Client
) -> None:
    admin.put("/v1/models/keep", json=SMALL).raise_for_status()
    target = admin.post("/v1/models/keep/checkpoints").json()
    for _ in range(5):
        decision = user.post("/v1/models/keep/predict", json={"context": [0.1, 0.2, 0.3, 0.4]})
        user.post(
            "/v1/models/keep/feedback", json={"event_id": decision.json()["event_id"], "loss": 1}
        )
        assert_error(user.post("/v1/models/keep/checkpoints"), 403, "authorization", "admin key")
    rolled = admin.post("/v1/models/keep/rollback", json={"version": target["version"]})
    assert rolled.status_code == 200, rolled.text
    assert rolled.json()["version"] == target["version"]


def test_row6_tree_export_is_bounded(admin: httpx.Client, user: httpx.Client) -> None:
    admin.put("/v1/models/small-tree", json=SMALL).raise_for_status()
    tree = user.get("/v1/models/small-tree/tree")
    assert tree.status_code == 200 and set(tree.json()) == {"version", "model"}
    big = {"kind": "dgt", "n_features": 300, "n_actions": 3, "height": 6}
    admin.put("/v1/models/big-tree", json=big).raise_for_status()
    assert_error(user.get("/v1/models/big-tree/tree"), 413, "name", "max_export_bytes=200000")
    admin.delete("/v1/models/big-tree").raise_for_status()
    admin.delete("/v1/models/small-tree").raise_for_status()


def test_row7_model_count_is_capped(admin: httpx.Client) -> None:
    held = len(admin.get("/v1/models").json()["models"])
    created = [f"cap-{i}" for i in range(MAX_MODELS - held)]
    for name in created:
        admin.put(f"/v1/models/{name}", json=SMALL).raise_for_status()
    assert_error(
        admin.put("/v1/models/one-more", json=SMALL), 409, "name", f"max_models={MAX_MODELS}"
    )
    admin.delete(f"/v1/models/{created[0]}").raise_for_status()
    assert admin.put("/v1/models/one-more", json=SMALL).status_code == 201
    for name in [*created[1:], "one-more"]:
        admin.delete(f"/v1/models/{name}").raise_for_status()


def test_row7_concurrent_creates_never_pass_the_model_cap(server: LiveServer) -> None:
    """Creates racing for the last free places: exactly that many land, the others 409."""
    with server.client(ADMIN) as http:
        held = len(http.get("/v1/models").json()["models"])
    names = [f"race-{i}" for i in range(MAX_MODELS - held + 4)]

    def put(name: str) -> int:
        with server.client(ADMIN) as http:
            return http.put(f"/v1/models/{name}", json=SMALL).status_code

    with ThreadPoolExecutor(len(names)) as pool:
        codes = list(pool.map(put, names))
    assert sorted(codes) == [201] * (MAX_MODELS - held) + [409] * 4, codes
    with server.client(ADMIN) as http:
        assert len(http.get("/v1/models").json()["models"]) == MAX_MODELS
        for name, code in zip(names, codes, strict=True):
            if code == 201:
                http.delete(f"/v1/models/{name}").raise_for_status()


def test_row11_answers_match_the_openapi_document(admin: httpx.Client) -> None:
    admin.put("/v1/models/m1", json=SMALL).raise_for_status()
    no_body = admin.post("/v1/models/m1/predict")
    assert no_body.status_code == 422
    body = no_body.json()
    assert isinstance(body["detail"], str) and isinstance(body["errors"], list)
    assert all(set(e) == {"field", "message"} for e in body["errors"])
    document = admin.get("/openapi.json").json()
    error_schema = document["components"]["schemas"]["ErrorPublic"]
    assert set(error_schema["required"]) == {"detail"}
    predict_answers = document["paths"]["/v1/models/{name}/predict"]["post"]["responses"]
    for status in ("400", "401", "404", "405", "413", "422", "503"):
        ref = predict_answers[status]["content"]["application/json"]["schema"]["$ref"]
        assert ref.endswith("/ErrorPublic"), status
    feedback_answers = document["paths"]["/v1/models/{name}/feedback"]["post"]["responses"]
    assert {"409", "410"} <= set(feedback_answers)
    put_answers = document["paths"]["/v1/models/{name}"]["put"]["responses"]
    assert {"403", "409"} <= set(put_answers)
    wrong_method = admin.post("/v1/models/m1", json={})
    assert_error(wrong_method, 405, None, "Method Not Allowed")
    assert wrong_method.headers["allow"] == "DELETE, GET, HEAD, PATCH, PUT"
    assert admin.delete("/v1/models/m1/predict").headers["allow"] == "POST"
    unknown = admin.get("/v1/models/nope")
    assert_error(unknown, 404, "name", "does not exist")


def test_row12_connections_without_complete_headers_are_closed(tmp_path: Path) -> None:
    port = free_port()
    env = {
        **os.environ, "PYTHONPATH": str(ROOT), "BANDITREE_DATA_DIR": str(tmp_path / "data"),
        "BANDITREE_PORT": str(port), "BANDITREE_HEADER_TIMEOUT_SECONDS": "1",
        "BANDITREE_KEEP_ALIVE_TIMEOUT_SECONDS": "1", "BANDITREE_LOG_LEVEL": "warning",
    }  # fmt: skip
    log = (tmp_path / "serve.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "banditree", "serve"], env=env, stdout=log, stderr=subprocess.STDOUT
    )
    try:
        wait_for_health(port, process)
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(30)]
        partial = [socket.create_connection(("127.0.0.1", port)) for _ in range(30)]
        for sock in partial:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Slow: ")
        for sock in idle + partial:
            sock.settimeout(30)  # the server must close it well before this
            assert sock.recv(100) == b""
            sock.close()
        with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=10) as http:
            assert http.get("/healthz").status_code == 200  # still serving
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=30)
        log.close()


def wait_for_health(port: int, process: subprocess.Popen[bytes]) -> None:
    for _ in range(600):
        if process.poll() is not None:
            raise RuntimeError("banditree serve exited early")
        try:
            if httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=1).status_code == 200:
                return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise RuntimeError("banditree serve did not start")
