"""A model created with no features over HTTP: its schema is inferred from the first
feedback learned, and a restart (checkpoint) or a full replay of the log rebuilds it.

A dgt model: the boosted default's replay of an inferred schema is checked in process
(``tests/learners/test_inferring.py``); through three servers it took minutes here."""

from __future__ import annotations

import random
import signal
import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

from tests.service.live_server import LiveServer

MODEL = "/v1/models/inferred"


def context(r: random.Random) -> dict[str, Any]:
    return {
        "age": r.randint(18, 80),
        "country": r.choice(["DE", "FR", "US"]),
        "tags": ["a", "b"][: r.randint(0, 2)],
        "user": {"os": r.choice(["ios", "android"]), "premium": r.random() < 0.5},
    }


def served(http: httpx.Client, probes: list[dict[str, Any]]) -> list[tuple[int, int, int]]:
    answer = http.post(f"{MODEL}/predict", json={"contexts": probes}).json()["decisions"]
    return [(d["model_version"], d["leaf"], d["greedy_action"]) for d in answer]


def test_schema_inferred_at_the_first_feedback_and_rebuilt_by_restart_and_replay(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    env = {
        "BANDITREE_DATA_DIR": str(tmp_path / "data"),
        # snapshots only on request: the restart below must replay the log
        "BANDITREE_CHECKPOINT_EVERY_SECONDS": "3600",
        "BANDITREE_CHECKPOINT_EVERY_UPDATES": "100000",
    }
    r = random.Random(0)
    probes = [context(random.Random(7 + i)) for i in range(8)]
    first = live_servers(env)
    with first.client() as http:
        created = http.put(MODEL, json={"kind": "dgt", "n_actions": 3})
        assert created.status_code in (200, 201), created.text
        config = created.json()["config"]
        assert config["features"] == "infer" and config["n_features"] == 1
        # no schema yet: uniform decisions; what inference would refuse is refused now
        early = http.post(f"{MODEL}/predict", json={"context": context(r)}).json()
        assert abs(early["probability"] - 1 / 3) < 1e-9 and early["model_version"] == 0
        for body, field in [
            ({"context": {}}, "context"),
            ({"context": [0.5, 0.5]}, "context"),
            ({"context": {"country": "x" * 300}}, "context.country"),
        ]:
            answer = http.post(f"{MODEL}/predict", json=body)
            assert answer.status_code == 422 and field in answer.text, (body, answer.text)
        events = [early["event_id"]]
        contexts = [early]
        for _ in range(299):
            ctx = context(r)
            d = http.post(f"{MODEL}/predict", json={"context": ctx}).json()
            events.append(d["event_id"])
            contexts.append({**d, "context": ctx})
        for d in contexts[1:]:
            ctx = d["context"]
            loss = float(d["action"] != (0 if ctx["country"] == "DE" else 1))
            ok = http.post(f"{MODEL}/feedback", json={"event_id": d["event_id"], "loss": loss})
            assert ok.status_code == 200, ok.text
        saved = http.post(f"{MODEL}/checkpoints").json()
        version = saved["version"]
        assert version > 0
        tree = http.get(f"{MODEL}/tree").json()["model"]
        assert tree["format"] == "banditree.named_tree/v1"
        assert [f["name"] for f in tree["features"]["features"]] == [
            "age", "country", "tags", "user.os", "user.premium",
        ]  # fmt: skip
        before = served(http, probes)
        assert {v for v, _, _ in before} == {version}
        # a name the schema does not know is ignored; a contradicting type is refused
        extra = served(http, [{**p, "new": "x"} for p in probes])
        assert [x[1:] for x in extra] == [x[1:] for x in before]
        bad = http.post(f"{MODEL}/predict", json={"context": {"age": "old"}})
        assert bad.status_code == 422 and "context.age" in bad.text
        explained = http.post(f"{MODEL}/predict", json={"context": probes[0], "explain": True})
        assert explained.json()["explanation"], explained.text
    first.stop(signal.SIGKILL)

    # restart from the checkpoint: the same schema, encoder and decisions
    second = live_servers(env)
    with second.client() as http:
        assert served(http, probes) == before
        assert http.get(f"{MODEL}/tree").json()["model"] == tree
    second.stop(signal.SIGKILL)

    # drop the learned checkpoints: the log is replayed from its start, inference included
    with sqlite3.connect(tmp_path / "data" / "banditree.sqlite3") as db:
        db.execute("DELETE FROM checkpoints WHERE version > 0")
        left = db.execute("SELECT COUNT(*) FROM checkpoints").fetchone()[0]
    db.close()
    assert left <= 1  # the one at creation, with no schema
    third = live_servers(env)
    with third.client() as http:
        assert http.post(f"{MODEL}/checkpoints").json()["version"] == version
        assert served(http, probes) == before
        assert http.get(f"{MODEL}/tree").json()["model"] == tree
    third.stop(signal.SIGTERM)
