"""A short, seeded stream of predict and feedback calls against a running service.

Besides well-formed feedback it sends duplicates, unknown event ids, invalid bodies and
late feedback to a model with a short event time to live, so every feedback outcome and
several HTTP statuses appear in the metrics.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import httpx

from banditree.learners import known_kinds

N_FEATURES = 4
N_ACTIONS = 3
_COMMON = {"n_features": N_FEATURES, "height": 3, "accumulate": 1, "learning_rate": 0.05}
_POLICY = {"checkpoint_every_updates": 10, "event_ttl_seconds": 60.0}


def model_configs() -> dict[str, dict[str, Any]]:
    """The models the stream drives; a TEL model only if kind ``tel`` is registered."""
    configs: dict[str, dict[str, Any]] = {
        "dgt-classifier": {
            **_COMMON, **_POLICY, "kind": "dgt", "task": "classification",
            "n_actions": N_ACTIONS, "explorer": "epsilon_greedy", "explorer_parameter": 0.3,
        },
        "dgt-regressor": {
            **_COMMON, **_POLICY, "kind": "dgt", "task": "regression", "estimator": "one_point",
        },
        "linear-short-ttl": {
            **_COMMON, **_POLICY, "kind": "linear", "task": "classification",
            "n_actions": N_ACTIONS, "event_ttl_seconds": 0.5,
        },
    }  # fmt: skip
    if "tel" in known_kinds():
        configs["tel-classifier"] = {
            **_COMMON, **_POLICY, "kind": "tel", "task": "classification", "n_actions": N_ACTIONS,
        }  # fmt: skip
    return configs


@dataclass
class TrafficSummary:
    """HTTP statuses seen, by call kind (``predict``, ``feedback``, ``duplicate``...)."""

    statuses: dict[str, Counter[int]] = field(default_factory=dict)

    def record(self, call: str, status: int) -> None:
        self.statuses.setdefault(call, Counter())[status] += 1


class TrafficDriver:
    """Drives the models of :func:`model_configs` for a fixed wall-clock time."""

    def __init__(self, client: httpx.Client, seed: int = 0) -> None:
        self.client = client
        self.random = random.Random(seed)
        self.summary = TrafficSummary()
        self.configs = model_configs()
        self._late: list[str] = []

    def create_models(self) -> None:
        for name, config in self.configs.items():
            response = self.client.put(f"/v1/models/{name}", json=config)
            assert response.status_code == 201, f"{name}: {response.status_code} {response.text}"

    def _context(self) -> list[float]:
        return [self.random.uniform(-1.0, 1.0) for _ in range(N_FEATURES)]

    def _loss(self, decision: dict[str, Any], context: list[float]) -> float:
        if "action" in decision and decision["action"] is not None:
            best = max(range(N_ACTIONS), key=lambda action: context[action])
            return 0.0 if decision["action"] == best else 1.0
        return float((decision["value"] - sum(context)) ** 2)

    def _predict(self, name: str, contexts: list[list[float]]) -> list[dict[str, Any]]:
        body: dict[str, Any] = (
            {"contexts": contexts} if len(contexts) > 1 else {"context": contexts[0]}
        )
        response = self.client.post(f"/v1/models/{name}/predict", json=body)
        self.summary.record("predict", response.status_code)
        if response.status_code != 200:
            return []
        payload = response.json()
        decisions: list[dict[str, Any]] = (
            payload["decisions"] if "decisions" in payload else [payload]
        )
        return decisions

    def _feedback(self, name: str, call: str, body: dict[str, Any] | bytes) -> None:
        url = f"/v1/models/{name}/feedback"
        if isinstance(body, bytes):
            headers = {"content-type": "application/json"}
            response = self.client.post(url, content=body, headers=headers)
        else:
            response = self.client.post(url, json=body)
        self.summary.record(call, response.status_code)

    def _step(self, step: int, name: str) -> None:
        contexts = [self._context() for _ in range(3 if step % 4 == 0 else 1)]
        decisions = self._predict(name, contexts)
        for context, decision in zip(contexts, decisions, strict=True):
            if name == "linear-short-ttl" and step % 2 == 0:
                self._late.append(decision["event_id"])
                continue
            body = {"event_id": decision["event_id"], "loss": self._loss(decision, context)}
            self._feedback(name, "feedback", body)
            if step % 5 == 0:
                self._feedback(name, "duplicate", body)
        if step % 6 == 0:
            self._feedback(name, "unknown", {"event_id": f"no-such-event-{step}", "loss": 0.0})
        if step % 7 == 0 and decisions:
            event_id = decisions[0]["event_id"]
            self._feedback(name, "invalid", {"event_id": event_id, "losses": [0.0, 1.0, 2.0]})
            self._feedback(name, "invalid", f'{{"event_id": "{event_id}", "loss": NaN}}'.encode())

    def run(self, duration_seconds: float) -> TrafficSummary:
        """Predict and feed back in rounds over all models for ``duration_seconds``."""
        deadline = time.monotonic() + duration_seconds
        step = 0
        while time.monotonic() < deadline:
            for name in self.configs:
                self._step(step, name)
            step += 1
            time.sleep(0.01)
        time.sleep(0.6)  # past the short time to live
        for event_id in self._late[-10:]:
            self._feedback("linear-short-ttl", "late", {"event_id": event_id, "loss": 0.0})
        return self.summary
