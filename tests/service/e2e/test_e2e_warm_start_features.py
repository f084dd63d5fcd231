"""`banditree train` on a CSV with categorical columns, then `banditree models import`:
the served model takes the file's features and answers JSON objects as the tree does."""

from __future__ import annotations

import csv
import json
import random
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from typer.testing import CliRunner

from banditree.learners import FeaturedLearner, build_learner
from banditree.learners.warm_start import ModelMismatch
from banditree.models.dgt.trained import TrainedTree
from banditree_cli import app
from tests.service.live_server import LiveServer


def rule(color: str, size: str) -> int:
    return 0 if color == "red" else 1 if size != "L" else 2


def write_csv(path: Path, n: int = 600) -> None:
    r = random.Random(0)
    with path.open("w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["color", "size", "weight", "fresh", "y"])
        for _ in range(n):
            color, size = r.choice(["red", "green", "blue"]), r.choice(["S", "M", "L"])
            weight = "" if r.random() < 0.1 else round(r.uniform(1, 10), 2)
            out.writerow([color, size, weight, r.choice(["yes", "no"]), rule(color, size)])


def probes() -> list[dict[str, Any]]:
    return [
        {"color": c, "size": s, "weight": w, "fresh": f}
        for c in ("red", "green", "blue")
        for s in ("S", "M", "L")
        for w, f in ((2.5, True), (None, "no"))
    ]


def test_a_tree_trained_on_categories_warm_starts_a_model_with_features(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    data, out = tmp_path / "fruit.csv", tmp_path / "out"
    write_csv(data)
    args = ["train", str(data), "--label", "y", "--grid", "none", "--height", "3"]
    trained_cli = CliRunner().invoke(app, [*args, "--epochs", "30", "--out", str(out)])
    assert trained_cli.exit_code == 0, trained_cli.output
    path = out / "model.safetensors"
    trained = TrainedTree.load(path)
    assert trained.features is not None and trained.encoder is not None
    report = json.loads((out / "report.json").read_text())
    assert trained.features == report["features"]
    types = {f["name"]: f["type"] for f in trained.features["features"]}
    assert types == {
        "color": "categorical", "size": "categorical", "weight": "numeric", "fresh": "boolean",
    }  # fmt: skip
    assert "n_features" not in trained.learner_config()

    # the library: the warm-started learner decides on JSON objects as the tree does
    learner = build_learner({"n_actions": 3, "height": 3}, initial_model=path.read_bytes())
    assert isinstance(learner, FeaturedLearner)
    assert learner.config()["features"] == trained.features
    contexts = probes()
    greedy = learner.predict(contexts).tolist()
    encoded = np.stack([learner.encode(c) for c in contexts])
    assert greedy == trained.predict(encoded).tolist()
    assert greedy == [rule(c["color"], c["size"]) for c in contexts]  # test accuracy 100%
    # the missing weight is imputed with the training mean the file carries
    at = learner.encoder.columns().index("weight")
    assert contexts[1]["weight"] is None
    assert encoded[1][at] == trained.encoder["served_mean"][0] and encoded[1][at + 1] == 1.0
    for config in ({"n_actions": 3, "height": 3, "n_features": 10},
                   {"n_actions": 3, "height": 3, "features": {"color": "categorical"}}):  # fmt: skip
        try:
            build_learner(config, initial_model=trained)
        except ModelMismatch as err:
            assert err.field == "features"
        else:
            raise AssertionError(f"{config} warm-started from a tree on other features")

    # the service: models import, then JSON contexts; a restart keeps it
    env = {"BANDITREE_DATA_DIR": str(tmp_path / "data")}
    server = live_servers(env)
    imported = CliRunner().invoke(
        app, ["models", "import", "fruit", str(path), "--server", server.url]
    )
    assert imported.exit_code == 0, imported.output
    with server.client() as http:
        config = http.get("/v1/models/fruit").json()["config"]
        assert config["features"] == trained.features and config["n_features"] == encoded.shape[1]
        answer = http.post("/v1/models/fruit/predict", json={"contexts": contexts}).json()
        assert [d["greedy_action"] for d in answer["decisions"]] == greedy
        one = http.post("/v1/models/fruit/predict", json={"context": {"color": "red"}})
        assert one.status_code == 200 and one.json()["greedy_action"] == 0
        bad = http.post("/v1/models/fruit/predict", json={"context": {"weight": "heavy"}})
        assert bad.status_code == 422 and "context.weight" in bad.text
        floats = http.put(
            "/v1/models/floats",
            json={"n_actions": 3, "height": 3, "n_features": encoded.shape[1],
                  "initial_model": trained.to_base64()},
        )  # fmt: skip
        assert floats.status_code == 422 and "features" in floats.text, floats.text
    server.stop(signal.SIGKILL)
    again = live_servers(env)
    with again.client() as http:
        answer = http.post("/v1/models/fruit/predict", json={"contexts": contexts}).json()
        assert [d["greedy_action"] for d in answer["decisions"]] == greedy
