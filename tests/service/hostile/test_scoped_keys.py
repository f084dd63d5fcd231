"""Scoped keys: a key reaches only its models and roles; ``/metrics`` can need a key."""

from __future__ import annotations

import json
import signal
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from service.settings import SettingsError, load_settings
from tests.service.live_server import LiveServer

ADMIN, USER, METRICS = "admin-key-1", "user-key-1", "metrics-key-1"
READER, PREDICTOR, TEAM = "shop-reader", "shop1-predictor", "team-admin"
SCOPED = [
    {"key": READER, "roles": ["read"], "models": ["shop-*"]},
    {"key": PREDICTOR, "roles": ["predict"], "models": ["shop-1"]},
    {"key": TEAM, "roles": ["admin", "predict", "read"], "models": ["team-*"]},
]
MODEL = {"n_features": 2, "n_actions": 2, "accumulate": 1}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    root = tmp_path_factory.mktemp("scoped")
    live = LiveServer(
        {
            "BANDITREE_DATA_DIR": str(root / "data"),
            "BANDITREE_API_KEYS": USER,
            "BANDITREE_ADMIN_KEYS": ADMIN,
            "BANDITREE_SCOPED_KEYS": json.dumps(SCOPED),
            "BANDITREE_METRICS_KEY": METRICS,
        },
        log_path=root / "server.log",
    )
    with live.client(ADMIN) as http:
        for name in ("shop-1", "shop-2", "other"):
            http.put(f"/v1/models/{name}", json=MODEL).raise_for_status()
            decision = http.post(f"/v1/models/{name}/predict", json={"context": [0.1, 0.2]})
            event = decision.json()["event_id"]
            http.post(f"/v1/models/{name}/feedback", json={"event_id": event, "loss": 0.0})
    yield live
    live.stop(signal.SIGKILL)


def call(
    server: LiveServer, key: str | None, method: str, path: str, **kw: object
) -> httpx.Response:
    with server.client(key) as http:
        answer = http.request(method, path, **kw)  # type: ignore[arg-type]
    assert answer.status_code < 500, answer.text
    return answer


def refused(answer: httpx.Response, status: int, words: str) -> None:
    assert answer.status_code == status, answer.text
    assert answer.json()["field"] == "authorization" and words in answer.json()["detail"]


def predict(server: LiveServer, key: str, name: str) -> httpx.Response:
    return call(server, key, "POST", f"/v1/models/{name}/predict", json={"context": [0.3, 0.1]})


def test_a_read_key_reads_its_models_only(server: LiveServer) -> None:
    for name in ("shop-1", "shop-2"):
        assert call(server, READER, "GET", f"/v1/models/{name}/log").status_code == 200
        assert call(server, READER, "GET", f"/v1/models/{name}/tree").status_code == 200
        assert call(server, READER, "GET", f"/v1/models/{name}/checkpoints").status_code == 200
        assert call(server, READER, "GET", f"/v1/models/{name}").status_code == 200
    refused(call(server, READER, "GET", "/v1/models/other/log"), 403, "does not reach")
    refused(call(server, READER, "GET", "/v1/models/other/tree"), 403, "does not reach")
    refused(call(server, READER, "GET", "/v1/models/other"), 403, "does not reach")
    refused(predict(server, READER, "shop-1"), 403, "predict role")
    names = [m["name"] for m in call(server, READER, "GET", "/v1/models").json()["models"]]
    assert sorted(names) == ["shop-1", "shop-2"]


def test_a_predict_key_cannot_export_the_log_or_tree(server: LiveServer) -> None:
    decision = predict(server, PREDICTOR, "shop-1")
    assert decision.status_code == 200
    feedback = call(server, PREDICTOR, "POST", "/v1/models/shop-1/feedback",
                    json={"event_id": decision.json()["event_id"], "loss": 1.0})  # fmt: skip
    assert feedback.status_code == 200
    refused(call(server, PREDICTOR, "GET", "/v1/models/shop-1/log"), 403, "read role")
    refused(call(server, PREDICTOR, "GET", "/v1/models/shop-1/tree"), 403, "read role")
    refused(predict(server, PREDICTOR, "shop-2"), 403, "does not reach")
    refused(call(server, PREDICTOR, "PUT", "/v1/models/shop-9", json=MODEL), 403, "admin key")


def test_a_scoped_admin_manages_its_namespace_only(server: LiveServer) -> None:
    assert call(server, TEAM, "PUT", "/v1/models/team-a", json=MODEL).status_code == 201
    assert predict(server, TEAM, "team-a").status_code == 200
    assert call(server, TEAM, "POST", "/v1/models/team-a/checkpoints").status_code == 201
    refused(call(server, TEAM, "PUT", "/v1/models/shop-9", json=MODEL), 403, "does not reach")
    refused(call(server, TEAM, "DELETE", "/v1/models/shop-1"), 403, "does not reach")
    assert call(server, TEAM, "DELETE", "/v1/models/team-a").status_code == 204


def test_the_existing_keys_keep_their_meaning(server: LiveServer) -> None:
    """An app key predicts on every model, but has no read role (issue 41, item 5): it
    cannot export a model's log of raw contexts, nor its tree or checkpoints."""
    for name in ("shop-1", "other"):
        assert predict(server, USER, name).status_code == 200
        for export in ("log", "tree", "checkpoints"):
            answer = call(server, USER, "GET", f"/v1/models/{name}/{export}")
            refused(answer, 403, "read role")
        assert call(server, ADMIN, "GET", f"/v1/models/{name}/log").status_code == 200
    refused(call(server, USER, "PUT", "/v1/models/x", json=MODEL), 403, "admin key")
    assert len(call(server, USER, "GET", "/v1/models").json()["models"]) >= 3
    refused(call(server, None, "GET", "/v1/models"), 401, "missing API key")
    refused(call(server, "not-a-key", "GET", "/v1/models/shop-1/log"), 401, "unknown API key")
    assert call(server, ADMIN, "PUT", "/v1/models/y", json=MODEL).status_code == 201
    assert call(server, ADMIN, "DELETE", "/v1/models/y").status_code == 204


def test_metrics_needs_the_metrics_key_when_set(server: LiveServer) -> None:
    refused(call(server, None, "GET", "/metrics"), 401, "missing API key")
    refused(call(server, USER, "GET", "/metrics"), 401, "metrics key")
    refused(call(server, READER, "GET", "/metrics"), 401, "metrics key")
    for key in (METRICS, ADMIN):
        answer = call(server, key, "GET", "/metrics")
        assert answer.status_code == 200 and "banditree_" in answer.text
    assert call(server, None, "GET", "/healthz").status_code == 200  # probes stay open


def test_metrics_need_an_admin_key_whenever_keys_are_set(tmp_path: Path) -> None:
    """Without BANDITREE_METRICS_KEY, /metrics (every model's name, the lease holders'
    hosts) was open although keys were configured (issue 41, item 4); an app key with
    ``BANDITREE_API_KEY_ROLES`` ``["predict", "read"]`` exports logs as before."""
    live = LiveServer(
        {"BANDITREE_DATA_DIR": str(tmp_path / "data"), "BANDITREE_API_KEYS": USER,
         "BANDITREE_ADMIN_KEYS": ADMIN, "BANDITREE_API_KEY_ROLES": '["predict", "read"]'},
        log_path=tmp_path / "server.log",
    )  # fmt: skip
    try:
        refused(httpx.get(live.url + "/metrics"), 401, "missing API key")
        refused(call(live, USER, "GET", "/metrics"), 401, "metrics key")
        assert call(live, ADMIN, "GET", "/metrics").status_code == 200
        assert call(live, ADMIN, "PUT", "/v1/models/m", json=MODEL).status_code == 201
        assert call(live, USER, "GET", "/v1/models/m/log").status_code == 200
    finally:
        live.stop(signal.SIGKILL)


@pytest.mark.parametrize(
    ("value", "words"),
    [
        ('[{"key": "long-enough", "roles": ["root"]}]', "BANDITREE_SCOPED_KEYS[0].roles[0]"),
        ('[{"key": "short", "roles": ["read"]}]', "BANDITREE_SCOPED_KEYS[0].key"),
        ('[{"key": "long-enough", "roles": []}]', "BANDITREE_SCOPED_KEYS[0].roles"),
        ('[{"key": "user-key-1", "roles": ["read"]}]', "listed twice"),
    ],
)
def test_bad_scoped_keys_stop_the_start_naming_the_entry(
    monkeypatch: pytest.MonkeyPatch, value: str, words: str
) -> None:
    monkeypatch.setenv("BANDITREE_API_KEYS", USER)
    monkeypatch.setenv("BANDITREE_SCOPED_KEYS", value)
    with pytest.raises(SettingsError, match=words.replace("[", r"\[").replace("]", r"\]")):
        load_settings()


def test_whoami_names_each_keys_roles_and_models(server: LiveServer) -> None:
    def who(key: str) -> dict[str, object]:
        answer = call(server, key, "GET", "/v1/whoami")
        assert answer.status_code == 200, answer.text
        return dict(answer.json())

    assert who(ADMIN) == {"roles": ["admin", "predict", "read"], "models": None, "open": False}
    # an app key predicts only (BANDITREE_API_KEY_ROLES, issue 41 item 5)
    assert who(USER) == {"roles": ["predict"], "models": None, "open": False}
    assert who(READER) == {"roles": ["read"], "models": ["shop-*"], "open": False}
    refused(call(server, None, "GET", "/v1/whoami"), 401, "missing API key")
    refused(call(server, "no-such-key", "GET", "/v1/whoami"), 401, "unknown API key")


def test_leaves_and_trace_need_the_read_role_on_the_model(server: LiveServer) -> None:
    for method, path, body in (
        ("GET", "/v1/models/shop-1/leaves", None),
        ("POST", "/v1/models/shop-1/trace", {"context": [0.1, 0.2]}),
    ):
        assert call(server, READER, method, path, json=body).status_code == 200
        refused(call(server, PREDICTOR, method, path, json=body), 403, "read role")
        other = path.replace("shop-1", "other")
        refused(call(server, READER, method, other, json=body), 403, "does not reach")


def test_a_models_deeper_routes_need_the_role_and_the_model(server: LiveServer) -> None:
    """A checkpoint's tree and an evaluation are the model's: the role, and a key that reaches it."""
    tree = "/v1/models/{}/checkpoints/1/tree"
    refused(call(server, READER, "GET", tree.format("other")), 403, "does not reach")
    refused(call(server, PREDICTOR, "GET", tree.format("shop-1")), 403, "read role")
    assert call(server, READER, "GET", tree.format("shop-1")).status_code in (200, 404)
    refused(call(server, READER, "POST", "/v1/models/shop-1/evaluations", json={}), 403, "admin")
    refused(call(server, READER, "DELETE", "/v1/models/shop-1/evaluations/e1"), 403, "admin")
    refused(call(server, PREDICTOR, "GET", "/v1/models/shop-1/evaluations/e1"), 403, "read role")
    refused(call(server, READER, "GET", "/v1/models/other/evaluations/e1"), 403, "does not reach")
    refused(call(server, READER, "GET", "/v1/models/other/evaluations"), 403, "does not reach")
    refused(call(server, PREDICTOR, "GET", "/v1/models/shop-1/drift"), 403, "read role")
    assert call(server, READER, "GET", "/v1/models/shop-1/drift").json()["signals"] == 0
    assert call(server, READER, "GET", "/v1/models/shop-1/evaluations/e1").status_code == 404
    listed = call(server, READER, "GET", "/v1/models/shop-1/evaluations").json()
    assert listed == {"evaluations": []}
    refused(call(server, TEAM, "POST", "/v1/models/shop-1/evaluations", json={}), 403, "reach")


def test_series_lists_the_models_a_key_reaches(server: LiveServer) -> None:
    for _ in range(150):  # the first samples come SAMPLE_SECONDS apart
        every = call(server, ADMIN, "GET", "/v1/series").json()["models"]
        if len(every) == 3:
            break
        time.sleep(0.1)
    assert sorted(every) == ["other", "shop-1", "shop-2"]
    assert sorted(call(server, READER, "GET", "/v1/series").json()["models"]) == [
        "shop-1",
        "shop-2",
    ]
    refused(call(server, None, "GET", "/v1/series"), 401, "missing API key")
