"""``banditree models import`` sends the warm start's recommended learning rate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from typer.testing import CliRunner

from banditree.import_command import WARM_START_LEARNING_RATE
from banditree.models.dgt.trained import TrainedTree
from banditree.supervised import DGTClassifier
from banditree_cli import app


@pytest.fixture(scope="module")
def model_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    rng = np.random.default_rng(0)
    X = rng.normal(size=(200, 3))
    y = (X[:, 0] > 0).astype(int)
    clf = DGTClassifier(height=2, epochs=1, progress=False).fit(X, y)
    path = tmp_path_factory.mktemp("model") / "model.safetensors"
    TrainedTree.from_estimator(clf).save(path)
    return path


def _sent(monkeypatch: pytest.MonkeyPatch, args: list[str]) -> dict[str, Any]:
    sent: dict[str, Any] = {}

    def put(url: str, *, json: dict[str, Any], **_: Any) -> httpx.Response:
        sent.update(json)
        return httpx.Response(201, json={"name": "m"})

    monkeypatch.setattr(httpx, "put", put)
    result = CliRunner().invoke(app, ["models", "import", "m", *args])
    assert result.exit_code == 0, result.output
    return sent


def test_the_warm_start_rate_is_the_default(
    monkeypatch: pytest.MonkeyPatch, model_file: Path
) -> None:
    body = _sent(monkeypatch, [str(model_file)])
    assert body["learning_rate"] == WARM_START_LEARNING_RATE == 1e-3
    assert body["initial_model"]


def test_the_config_file_and_the_option_override_it(
    monkeypatch: pytest.MonkeyPatch, model_file: Path, tmp_path: Path
) -> None:
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"learning_rate": 0.01}))
    assert _sent(monkeypatch, [str(model_file), "--config", str(config)])["learning_rate"] == 0.01
    body = _sent(monkeypatch, [str(model_file), "--config", str(config), "--learning-rate", "2e-4"])
    assert body["learning_rate"] == 2e-4
