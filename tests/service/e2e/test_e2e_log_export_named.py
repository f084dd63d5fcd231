"""A model with named features through a live server: its exported log (JSON contexts)
evaluates offline, the live config reproducing the live progressive value."""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from typer.testing import CliRunner

from banditree.client import Client
from banditree.logs import LogWriter, read_log
from banditree_cli import app as cli
from tests.service.live_server import LiveServer

ROUNDS = 600


def context(r: random.Random) -> dict[str, Any]:
    return {
        "age": r.choice([r.randint(18, 80), None]),
        "country": r.choice(["DE", "FR", "US"]),
        "user": {"os": r.choice(["ios", "android"])},
    }


def best(ctx: dict[str, Any]) -> int:
    return 0 if ctx["country"] == "DE" else 1 if ctx["user"]["os"] == "ios" else 2


def test_a_log_of_json_contexts_evaluates_offline(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    env = {
        "BANDITREE_DATA_DIR": str(tmp_path / "data"),
        "BANDITREE_CHECKPOINT_EVERY_UPDATES": "1",
        "BANDITREE_CHECKPOINT_KEEP": "10000",
    }
    server = live_servers(env)
    r = random.Random(0)
    losses = []
    with Client(server.url) as client:
        client.create_model("named", {"n_actions": 3, "height": 4})  # features inferred
        for _ in range(ROUNDS):
            ctx = context(r)
            decision = client.predict("named", ctx)
            loss = float(decision.action != best(ctx))
            client.feedback("named", decision.event_id, loss=loss)
            losses.append(loss)
        rows = list(client.export_log("named"))
        stored = client.get_model("named").config
    assert stored["features"] == "infer" and len(rows) == ROUNDS
    assert all(isinstance(row["context"], dict) for row in rows)
    with LogWriter(tmp_path / "log.ndjson") as writer:
        writer.write(rows)
    table = read_log(tmp_path / "log.ndjson")
    assert table.named and table.objects is not None and table.objects[0] == rows[0]["context"]
    try:  # flat formats have no columns for named features: refused, naming the way out
        with LogWriter(tmp_path / "log.csv") as flat:
            flat.write(rows)
    except ValueError as err:
        assert "NDJSON" in str(err)
    else:
        raise AssertionError("a log of named features was written as CSV")

    (tmp_path / "same.json").write_text(json.dumps(stored))
    declared = {"n_actions": 3, "height": 4, "features": {
        "age": "numeric", "country": "categorical", "user": {"os": "categorical"},
    }}  # fmt: skip
    (tmp_path / "declared.json").write_text(json.dumps(declared))
    (tmp_path / "floats.json").write_text(json.dumps({"n_features": 3, "n_actions": 3}))
    args = ["--out", str(tmp_path / "ev"), "--n-bootstrap", "200", "--no-progress"]
    refused = CliRunner().invoke(
        cli,
        [
            "evaluate",
            str(tmp_path / "log.ndjson"),
            "--config",
            str(tmp_path / "floats.json"),
            *args,
        ],
    )
    assert refused.exit_code != 0 and "named features" in refused.output, refused.output
    result = CliRunner().invoke(
        cli,
        [
            "evaluate", str(tmp_path / "log.ndjson"), "--config", str(tmp_path / "same.json"),
            "--config", str(tmp_path / "declared.json"), *args,
        ],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "ev" / "report.json").read_text())
    assert report["log"]["n_features"] == 3
    assert sorted(f["name"] for f in report["log"]["features"]["features"]) == [
        "age", "country", "user.os",
    ]  # fmt: skip
    same = report["candidates"]["same"]
    low, high = same["progressive_value_ci95"]
    assert low <= 1.0 - float(np.mean(losses)) <= high
    inferred = [f["name"] for f in same["features"]["features"]]
    assert set(inferred) <= {"age", "country", "user.os"} and "country" in inferred
    # every weight ~1: the replay reproduces each live decision's probability, the
    # pre-schema ones and the inference at the first learned row included
    assert same["progressive_rounds"] > 0.999 * ROUNDS
    # the declared schema's candidate learns the rule: far above a constant action (~0.4)
    assert report["candidates"]["declared"]["dr"] > 0.9
