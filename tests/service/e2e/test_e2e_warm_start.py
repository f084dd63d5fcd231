"""PUT /v1/models/{name} with "initial_model", and `banditree models import`, over real HTTP."""

from __future__ import annotations

import base64
import signal
from collections.abc import Callable
from pathlib import Path

import numpy as np
from typer.testing import CliRunner

from banditree.datasets import load
from banditree.supervised import DGTClassifier, DGTRegressor
from banditree.supervised.model_file import TrainedTree
from banditree_cli import app
from tests.service.live_server import LiveServer


def _greedy(http, name: str, x: np.ndarray) -> list[int]:
    answer = http.post(f"/v1/models/{name}/predict", json={"contexts": x.tolist()})
    answer.raise_for_status()
    return [d["greedy_action"] for d in answer.json()["decisions"]]


def test_import_starts_the_served_model_from_the_trained_tree(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    ds = load("segmentation")
    clf = DGTClassifier(height=4, epochs=15, progress=False).fit(ds.X_train, ds.y_train)
    trained = TrainedTree.from_estimator(clf)
    path = tmp_path / "model.safetensors"
    trained.save(path)
    env = {"BANDITREE_DATA_DIR": str(tmp_path / "data")}
    server = live_servers(env)
    result = CliRunner().invoke(app, ["models", "import", "seg", str(path), "--server", server.url])
    assert result.exit_code == 0, result.output
    expected = clf.predict(ds.X_test[:100]).tolist()
    with server.client() as http:
        assert _greedy(http, "seg", ds.X_test[:100]) == expected
        assert http.get("/v1/models/seg").json()["config"]["height"] == 4
    again = CliRunner().invoke(app, ["models", "import", "seg", str(path), "--server", server.url])
    assert again.exit_code == 1 and "409" in again.output
    server.stop(signal.SIGKILL)
    restarted = live_servers(env)  # the warm start was checkpointed at creation
    with restarted.client() as http:
        assert _greedy(http, "seg", ds.X_test[:100]) == expected


def test_bad_initial_model_gets_a_422_naming_the_field(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    ds = load("segmentation")
    clf = DGTClassifier(height=3, epochs=1, progress=False).fit(ds.X_train, ds.y_train)
    encoded = TrainedTree.from_estimator(clf).to_base64()
    body = {"kind": "dgt", "n_features": ds.n_features, "n_actions": 7, "height": 3}
    server = live_servers({"BANDITREE_DATA_DIR": str(tmp_path / "data")})
    with server.client() as http:
        cases = [
            ({**body, "initial_model": "***"}, "not base64"),
            ({**body, "initial_model": base64.b64encode(b"x" * 64).decode()}, "model file"),
            ({**body, "height": 4, "initial_model": encoded}, "height"),
            ({**body, "n_features": 3, "initial_model": encoded}, "n_features"),
        ]
        for payload, words in cases:
            answer = http.put("/v1/models/bad", json=payload)
            assert answer.status_code == 422, answer.text
            assert answer.json()["field"] == "initial_model" and words in answer.json()["detail"]
        assert http.get("/v1/models/bad").status_code == 404  # nothing was created
        big = {**body, "initial_model": "A" * 2_000_000}
        assert http.put("/v1/models/bad", json=big).status_code == 413  # the body bound
        assert http.put("/v1/models/ok", json={**body, "initial_model": encoded}).status_code == 201


def test_a_regression_warm_start_that_names_no_kind_builds_the_trees_dgt(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    """The regression default is a forest, but a warm start builds the ``dgt`` it was given."""
    ds = load("abalone")
    reg = DGTRegressor(height=3, epochs=2, progress=False).fit(ds.X_train, ds.y_train)
    trained = TrainedTree.from_estimator(reg)
    body = {"task": "regression", "n_features": ds.n_features, "height": 3}
    server = live_servers({"BANDITREE_DATA_DIR": str(tmp_path / "data")})
    with server.client() as http:
        answer = http.put("/v1/models/reg", json={**body, "initial_model": trained.to_base64()})
        assert answer.status_code == 201, answer.text
        assert http.get("/v1/models/reg").json()["config"]["kind"] == "dgt"
        served = http.post("/v1/models/reg/predict", json={"contexts": ds.X_test[:20].tolist()})
        served.raise_for_status()
        values = [d["greedy_value"] for d in served.json()["decisions"]]
        np.testing.assert_allclose(values, reg.predict(ds.X_test[:20]), rtol=1e-6, atol=1e-6)
        cold = http.put("/v1/models/cold", json=body)
        assert cold.status_code == 201 and cold.json()["config"]["kind"] == "dgt_forest"
