"""Traffic for the browser tests: a model created over HTTP and fed by predict and feedback."""

from __future__ import annotations

import random
import time
from typing import Any

import httpx

#: a model with named features: the console writes its splits with these names
NAMED = {
    "kind": "dgt",
    "task": "classification",
    "n_actions": 3,
    "height": 3,
    "features": {"age": "numeric", "city": "categorical"},
}


def context(r: random.Random) -> dict[str, Any]:
    return {"age": round(r.uniform(18, 80), 1), "city": r.choice(["paris", "oslo", "lima"])}


def best_action(ctx: dict[str, Any]) -> int:
    """The rule the traffic rewards: young people take 0, Oslo 1, the rest 2."""
    return 0 if ctx["age"] < 35 else 1 if ctx["city"] == "oslo" else 2


def feed(client: httpx.Client, name: str, rounds: int, seed: int = 0, batch: int = 50) -> None:
    """``rounds`` decisions of ``name`` (batch predicts), each with its 0/1 loss, then wait
    until the learner has applied every feedback."""
    r = random.Random(seed)
    for start in range(0, rounds, batch):
        contexts = [context(r) for _ in range(min(batch, rounds - start))]
        answer = client.post(f"/v1/models/{name}/predict", json={"contexts": contexts})
        assert answer.status_code == 200, answer.text
        for ctx, decision in zip(contexts, answer.json()["decisions"], strict=True):
            loss = 0.0 if decision["action"] == best_action(ctx) else 1.0
            sent = client.post(
                f"/v1/models/{name}/feedback", json={"event_id": decision["event_id"], "loss": loss}
            )
            assert sent.status_code == 200, sent.text
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        model = client.get(f"/v1/models/{name}").json()
        if model["pending_updates"] == 0 and model["counters"]["feedback"] >= rounds:
            return
        time.sleep(0.1)
    raise AssertionError(f"the learner did not apply {rounds} feedbacks: {model}")


def create(client: httpx.Client, name: str, config: dict[str, Any]) -> None:
    client.delete(f"/v1/models/{name}")
    response = client.put(f"/v1/models/{name}", json=config)
    assert response.status_code == 201, response.text
