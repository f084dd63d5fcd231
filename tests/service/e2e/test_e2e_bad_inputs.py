"""Every bad input gets its 4xx (never a 5xx) and leaves every model's parameters unchanged."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest

from banditree.client import Client
from tests.service.conftest import REDIS_URL, delete_prefix
from tests.service.live_server import LiveServer

pytestmark = pytest.mark.redis

ADMIN, USER = "admin-secret", "user-secret"
CTX = [0.1, 0.2, 0.3, 0.4]
MODELS = {
    "clf": {"n_features": 4, "n_actions": 3, "accumulate": 1, "learning_rate": 0.05},
    "reg2": {"task": "regression", "n_features": 4, "estimator": "two_point", "accumulate": 1},
    "reg1": {"task": "regression", "n_features": 4, "accumulate": 1, "loss_min": 0, "loss_max": 10},
    "short": {"n_features": 4, "n_actions": 3, "accumulate": 1, "event_ttl_seconds": 0.3},
    "fallback": {
        "n_features": 4, "n_actions": 3, "accumulate": 1, "event_ttl_seconds": 0.3,
        "default_loss": 1.0,
    },
}  # fmt: skip
WATCHED = ("clf", "reg2", "reg1", "short")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    prefix = f"banditree-test:{uuid.uuid4().hex}:"
    live = LiveServer(
        {
            "BANDITREE_REDIS_URL": REDIS_URL,
            "BANDITREE_REDIS_PREFIX": prefix,
            "BANDITREE_API_KEYS": USER,
            "BANDITREE_ADMIN_KEYS": ADMIN,
            "BANDITREE_MAX_BODY_BYTES": "65536",
            "BANDITREE_MAX_BATCH": "8",
            "BANDITREE_SWEEP_INTERVAL_SECONDS": "0.2",
        },
        log_path=tmp_path_factory.mktemp("server") / "server.log",
    )
    with live.client(ADMIN) as http:
        for name, config in MODELS.items():
            http.put(f"/v1/models/{name}", json=config).raise_for_status()
    yield live
    live.stop(signal.SIGKILL)
    delete_prefix(prefix)


def predict(http: httpx.Client, model: str) -> dict[str, Any]:
    answer = http.post(f"/v1/models/{model}/predict", json={"context": CTX})
    assert answer.status_code == 200, answer.text
    decision: dict[str, Any] = answer.json()
    return decision


def checkpoint(http: httpx.Client, name: str) -> None:
    """Checkpoint ``name`` through :class:`banditree.client.Client`, which retries a 503 (a
    Redis call past its 0.25 s timeout on a loaded machine): set-up, not the case under test."""
    with Client(str(http.base_url), api_key=ADMIN) as client:
        client.checkpoint(name)


def snapshot(http: httpx.Client) -> dict[str, Any]:
    """Parameters, version and counters of every watched model, after the writers are idle."""
    state: dict[str, Any] = {
        "names": sorted(m["name"] for m in http.get("/v1/models").json()["models"])
    }
    for name in WATCHED:
        checkpoint(http, name)  # flushes the writer
        model = http.get(f"/v1/models/{name}").json()
        state[name] = (
            model["version"],
            model["counters"]["feedback"],
            http.get(f"/v1/models/{name}/tree").json(),
        )
    return state


Prepare = Callable[[httpx.Client], dict[str, Any]]


@dataclass(frozen=True)
class Case:
    name: str
    method: str
    path: str
    status: int
    detail: str
    body: Any = None
    raw: str | None = None
    key: str | None = USER
    prepare: Prepare | None = field(default=None, compare=False)


def feedback_case(name: str, model: str, status: int, detail: str, **extra: Any) -> Case:
    """A feedback request on a fresh decision of ``model``; ``{event_id}`` is filled in.

    The loss value ``"NaN-literal"`` is sent as the bare JSON text ``NaN``.
    """
    template = json.dumps({"event_id": "{event_id}", **extra}).replace('"NaN-literal"', "NaN")
    return Case(
        name, "POST", f"/v1/models/{model}/feedback", status, detail, raw=template,
        prepare=lambda http: {"event_id": predict(http, model)["event_id"]},
    )  # fmt: skip


def _duplicate(http: httpx.Client) -> dict[str, Any]:
    event_id = predict(http, "clf")["event_id"]
    fed = http.post("/v1/models/clf/feedback", json={"event_id": event_id, "loss": 0.0})
    assert fed.status_code == 200
    return {"event_id": event_id}


def _expired(http: httpx.Client) -> dict[str, Any]:
    event_id = predict(http, "short")["event_id"]
    time.sleep(0.5)
    return {"event_id": event_id}


CASES = [
    Case("context wrong length", "POST", "/v1/models/clf/predict", 422, "exactly 4 numbers", {"context": [1.0, 2.0]}),
    Case("context NaN", "POST", "/v1/models/clf/predict", 422, "finite", raw='{"context": [1, NaN, 2, 3]}'),
    Case("context Infinity", "POST", "/v1/models/clf/predict", 422, "finite", raw='{"context": [1, Infinity, 2, 3]}'),
    Case("context overflow", "POST", "/v1/models/clf/predict", 422, "finite", raw='{"context": [1, -1e999, 2, 3]}'),
    Case("context string", "POST", "/v1/models/clf/predict", 422, "context.1: Input should be a valid number", {"context": [1, "2", 3, 4]}),
    Case("context not a list", "POST", "/v1/models/clf/predict", 422, "valid list", {"context": 5}),
    Case("huge array", "POST", "/v1/models/clf/predict", 413, "max_body_bytes=65536", {"context": [0.5] * 100_000}),
    Case("context over schema bound", "POST", "/v1/models/clf/predict", 422, "at most 10000", {"context": [0] * 10_001}),
    Case("batch over max_batch", "POST", "/v1/models/clf/predict", 413, "max_batch=8", {"contexts": [CTX] * 9}),
    Case("batch row wrong length", "POST", "/v1/models/clf/predict", 422, "exactly 4", {"contexts": [CTX, [1.0]]}),
    Case("context and contexts", "POST", "/v1/models/clf/predict", 422, "exactly one", {"context": CTX, "contexts": [CTX]}),
    Case("unknown field", "POST", "/v1/models/clf/predict", 422, "Extra inputs", {"context": CTX, "ctx": 1}),
    Case("malformed JSON", "POST", "/v1/models/clf/predict", 422, "JSON decode error", raw='{"context": [1,'),
    Case("unknown model", "POST", "/v1/models/nope/predict", 404, "'nope' does not exist", {"context": CTX}),
    Case("bad model name", "POST", "/v1/models/bad$name/predict", 422, "pattern", {"context": CTX}),
    Case("unknown event", "POST", "/v1/models/clf/feedback", 404, "not a pending decision", {"event_id": "feedbeef", "loss": 0.0}),
    Case("missing event_id", "POST", "/v1/models/clf/feedback", 422, "event_id: Field required", {"loss": 0.0}),
    Case("duplicate event", "POST", "/v1/models/clf/feedback", 409, "already received", raw='{"event_id": "{event_id}", "loss": 1.0}', prepare=_duplicate),
    Case("expired event", "POST", "/v1/models/short/feedback", 410, "expired", raw='{"event_id": "{event_id}", "loss": 1.0}', prepare=_expired),
    Case("event of another model", "POST", "/v1/models/reg1/feedback", 404, "not a pending decision", raw='{"event_id": "{event_id}", "loss": 0.0}', prepare=lambda h: {"event_id": predict(h, "clf")["event_id"]}),
    feedback_case("loss NaN", "clf", 422, "loss: Input should be a finite number", loss="NaN-literal"),
    feedback_case("loss string", "clf", 422, "loss: Input should be a valid number", loss="0.5"),
    feedback_case("loss above range", "clf", 422, "loss: must be in [0.0, 1.0], got 1.5", loss=1.5),
    feedback_case("reward above range", "clf", 422, "computed from reward", reward=2.0),
    feedback_case("loss and reward", "clf", 422, "exactly one of 'loss', 'reward' or 'losses'", loss=0.0, reward=1.0),
    feedback_case("two-point single loss", "reg2", 422, "two_point feedback needs 'losses'", loss=0.1),
    feedback_case("two-point three losses", "reg2", 422, "losses: List should have at most 2 items", losses=[0.1, 0.2, 0.3]),
    feedback_case("two-point one loss", "reg2", 422, "losses: List should have at least 2 items", losses=[0.1]),
    feedback_case("one-point loss outside declared range", "reg1", 422, "must be in [0.0, 10.0]", loss=11.0),
    Case("missing key", "POST", "/v1/models/clf/predict", 401, "missing API key", {"context": CTX}, key=None),
    Case("wrong key", "POST", "/v1/models/clf/predict", 401, "unknown API key", {"context": CTX}, key="guess"),
    Case("wrong key listing models", "GET", "/v1/models", 401, "unknown API key", key="guess"),
    Case("user key creates", "PUT", "/v1/models/new", 403, "admin key", {"n_features": 4, "n_actions": 3}),
    Case("user key deletes", "DELETE", "/v1/models/clf", 403, "admin key"),
    Case("user key rolls back", "POST", "/v1/models/clf/rollback", 403, "admin key", {"version": 0}),
    Case("height above bound", "PUT", "/v1/models/new", 422, "height: Input should be less than or equal to", {"n_features": 4, "n_actions": 3, "height": 99}, key=ADMIN),
    Case("missing n_actions", "PUT", "/v1/models/new", 422, "n_actions is required", {"n_features": 4}, key=ADMIN),
    Case("unknown kind", "PUT", "/v1/models/new", 422, "kind must be one of", {"kind": "oak", "n_features": 4, "n_actions": 3}, key=ADMIN),
    Case("default_loss outside range", "PUT", "/v1/models/new", 422, "default_loss", {"n_features": 4, "n_actions": 3, "default_loss": 5.0}, key=ADMIN),
    Case("name taken", "PUT", "/v1/models/clf", 409, "exists", MODELS["clf"], key=ADMIN),
    Case("rollback to a missing version", "POST", "/v1/models/clf/rollback", 404, "no valid checkpoint of version 999", {"version": 999}, key=ADMIN),
]  # fmt: skip


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input_gets_its_4xx_and_changes_nothing(server: LiveServer, case: Case) -> None:
    with server.client(ADMIN) as admin, server.client(case.key) as http:
        fill = case.prepare(admin) if case.prepare else {}
        before = snapshot(admin)
        kwargs: dict[str, Any] = {}
        if case.raw is not None:
            raw = case.raw
            for key, value in fill.items():
                raw = raw.replace("{" + key + "}", value)
            kwargs = {"content": raw.encode(), "headers": {"content-type": "application/json"}}
        elif case.body is not None:
            kwargs = {"json": case.body}
        answer = http.request(case.method, case.path, **kwargs)
        assert answer.status_code == case.status, answer.text
        assert case.detail in answer.json()["detail"], answer.text
        assert snapshot(admin) == before


def test_regression_default_and_a_bad_task_over_http(server: LiveServer) -> None:
    """A regression model that names no kind is the 4-tree averaged forest; a bad ``task``
    is the one field a 422 names (not the defaults that depend on it)."""
    with server.client(ADMIN) as http:
        config = http.get("/v1/models/reg2").json()["config"]
        assert (config["kind"], config["n_trees"]) == ("dgt_forest", 4)
        assert len(http.get("/v1/models/reg2/tree").json()["model"]["trees"]) == 4
        answer = http.put("/v1/models/new", json={"task": "clustering", "n_features": 4})
        assert answer.status_code == 422, answer.text
        assert answer.json()["field"] == "task"
        assert [e["field"] for e in answer.json()["errors"]] == ["task"], answer.text
        assert http.get("/v1/models/new").status_code == 404


def test_default_loss_is_applied_once_at_expiry(server: LiveServer) -> None:
    with server.client(USER) as http:
        ids = [predict(http, "fallback")["event_id"] for _ in range(3)]
        deadline = time.monotonic() + 10
        while http.get("/v1/models/fallback").json()["counters"]["feedback"] < 3:
            assert time.monotonic() < deadline, "default loss never applied"
            time.sleep(0.1)
        time.sleep(0.5)  # further sweeps must not apply it again
        model = http.get("/v1/models/fallback").json()
        late = http.post("/v1/models/fallback/feedback", json={"event_id": ids[0], "loss": 0.0})
        metrics = http.get("/metrics").text
    assert model["counters"]["feedback"] == 3 and model["counters"]["progressive_mean_loss"] == 1.0
    assert late.status_code == 410
    assert 'banditree_expired_events_total{model="fallback"} 3.0' in metrics
    assert 'banditree_pending_events{model="fallback"} 0.0' in metrics


CONTRACT_METRICS = [
    "banditree_predictions_total", "banditree_explored_decisions_total", "banditree_feedback_total",
    "banditree_updates_total", "banditree_model_version", "banditree_progressive_mean_loss",
    "banditree_update_latency_seconds_bucket", "banditree_predict_latency_seconds_bucket",
    "banditree_checkpoint_duration_seconds_bucket", "banditree_checkpoint_age_seconds",
    "banditree_checkpoint_failures_total", "banditree_checkpoint_corrupt_total",
    "banditree_pending_events", "banditree_expired_events_total", "banditree_tel_reachable_leaves",
    "banditree_models_loaded", "banditree_http_requests_total",
    "banditree_http_request_duration_seconds_bucket",
]  # fmt: skip


def test_metrics_follow_the_contract(server: LiveServer, tmp_path: Path) -> None:
    with server.client() as http:
        text = http.get("/metrics").text  # open: no key needed for Prometheus
    for name in CONTRACT_METRICS:
        assert f"\n{name}{{" in text or f"\n{name} " in text, name
    for outcome in ("applied", "unknown", "expired", "duplicate", "invalid"):
        assert f'banditree_feedback_total{{model="clf",outcome="{outcome}"}}' in text
    assert 'route="/v1/models/{name}/predict"' in text and 'status="422"' in text
    assert "banditree_models_loaded 5.0" in text
    if shutil.which("promtool") is None:
        pytest.skip("promtool (Debian package prometheus) is not installed")
    checked = subprocess.run(
        ["promtool", "check", "metrics"], input=text, text=True, capture_output=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
