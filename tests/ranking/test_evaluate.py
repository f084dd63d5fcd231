"""Off-policy evaluation of a ranking configuration on a uniform-random DSJson log."""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from banditree.logs import LogWriter
from banditree.logs.dsjson import read_dsjson
from banditree.ranking.evaluate import evaluate_ranking


def _uniform_log(n: int, seed: int = 0) -> list[dict[str, object]]:
    """A logging policy that plays uniformly at random; the reward is 1 where the item's
    genre is the user's favourite (the features carry the signal)."""
    rng = random.Random(seed)
    rows = []
    for t in range(n):
        fav = rng.choice(["rock", "jazz", "folk"])
        k = rng.randrange(3, 7)
        features = [
            {"genre": rng.choice(["rock", "jazz", "folk"]), "len": rng.random()} for _ in range(k)
        ]
        chosen = rng.randrange(k)
        rows.append({
            "offset": t + 1, "event_id": f"e{t}", "time_seconds": 0.0, "model_version": 0,
            "context": [], "action": chosen, "propensity": 1.0 / k, "greedy_action": 0,
            "loss": 0.0 if features[chosen]["genre"] == fav else 1.0, "source": "feedback",
            "ranking": {"context": {"user": {"fav": fav}}, "ids": [f"i{j}" for j in range(k)],
                        "features": features, "probabilities": [1.0 / k] * k},
        })  # fmt: skip
    return rows


def test_a_learned_policy_beats_the_uniform_logger_off_policy(tmp_path: Path) -> None:
    path = tmp_path / "log.dsjson"
    with LogWriter(path, "dsjson") as writer:
        writer.write(_uniform_log(3000))
    rows = list(read_dsjson(path))
    result = evaluate_ranking(rows, {}, train_fraction=0.7, n_bootstrap=100)
    logged = result["logged_policy"]["value"]
    assert abs(logged - 1 / 3) < 0.05  # uniform play finds the favourite a third of the time
    greedy = result["greedy"]
    for name in ("ips", "snips", "dr"):
        low, high = greedy[name]["value_ci95"]
        assert low > result["logged_policy"]["value_ci95"][1], (name, greedy[name], logged)
        assert low <= greedy[name]["value"] <= high
    assert greedy["dr"]["value"] > 0.75
    assert result["n_train"] == 2100 and result["n_evaluation"] == 900


def test_too_few_rows_are_refused() -> None:
    with pytest.raises(ValueError, match="too few"):
        evaluate_ranking(_uniform_log(1), {})


def test_the_evaluate_command_reads_a_dsjson_log(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from banditree_cli import app

    path = tmp_path / "log.dsjson"
    with LogWriter(path, "dsjson") as writer:
        writer.write(_uniform_log(600))
    config = tmp_path / "default.json"
    config.write_text("{}")
    result = CliRunner().invoke(
        app, ["evaluate", str(path), "--config", str(config), "--out", str(tmp_path / "out"),
              "--n-bootstrap", "50", "--no-progress"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "default greedy" in result.output and "dr" in result.output
    report = json.loads((tmp_path / "out" / "report.json").read_text())
    assert report["log"]["format"] == "dsjson" and report["log"]["n_rows"] == 600
    assert set(report["candidates"]["default"]["greedy"]) == {"ips", "snips", "dr"}
