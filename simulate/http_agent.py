"""A model behind a running ``banditree serve``, driven through its HTTP API (v1).

``PUT /v1/models/{name}`` creates the model from a learner configuration,
``POST .../predict`` decides, ``POST .../feedback`` reports the loss(es), and the
held-out split is scored with batch predictions (their greedy action / value).
The model is deleted when the run is over.  The client is thread-safe, so rounds
may run concurrently (``--concurrency``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from banditree.learners import Decision, Feedback

#: Contexts per batch predict request when scoring the held-out split.
BATCH_SIZE = 256
#: Held-out predictions create events that never get feedback; they expire after this.
EVENT_TTL_SECONDS = 600


class ServiceError(RuntimeError):
    """The service refused a request; the message holds its status and body."""


class HttpAgent:
    """The runner's agent interface over HTTP.

    Parameters
    ----------
    server
        Base URL of the service, e.g. ``http://127.0.0.1:8000``.
    name
        Model name on the service (replaced if it exists).
    config
        The learner configuration (``PUT`` body; service fields may be added).
    api_key
        Sent as ``Authorization: Bearer <key>`` and ``X-API-Key``.
    timeout_seconds
        Per-request timeout.
    """

    def __init__(
        self,
        server: str,
        name: str,
        config: dict[str, Any],
        *,
        api_key: str | None = None,
        timeout_seconds: float = 30.0,
    ) -> None:
        import httpx

        headers = {"Authorization": f"Bearer {api_key}", "X-API-Key": api_key} if api_key else {}
        self.name = name
        self.task = config.get("task", "classification")
        self._client = httpx.Client(
            base_url=server.rstrip("/"),
            headers=headers,
            timeout=timeout_seconds,
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=64),
        )
        self._path = f"/v1/models/{name}"
        self._client.delete(self._path)  # a stale model of a previous run
        body = {**config, "event_ttl_seconds": EVENT_TTL_SECONDS}
        self._checked(self._client.put(self._path, json=body), "PUT", (200, 201))

    def _checked(self, response: Any, what: str, ok: tuple[int, ...] = (200,)) -> Any:
        if response.status_code not in ok:
            raise ServiceError(
                f"{what} {self._path}: HTTP {response.status_code}: {response.text[:500]}"
            )
        return response.json()

    def _decision(self, payload: dict[str, Any], context: Sequence[float]) -> Decision:
        probes = payload.get("probes")
        return Decision(
            event_id=str(payload["event_id"]),
            context=tuple(float(v) for v in context),
            model_version=int(payload.get("model_version", 0)),
            action=payload.get("action"),
            propensity=float(payload.get("probability", 1.0)),
            greedy_action=payload.get("greedy_action"),
            value=payload.get("value"),
            greedy_value=payload.get("greedy_value"),
            probes=(float(probes[0]), float(probes[1])) if probes else None,
            leaf=payload.get("leaf"),
        )

    def act(self, context: Sequence[float] | np.ndarray, event_id: str | None = None) -> Decision:
        """``POST /predict`` with one context (the service assigns the event id)."""
        x = [float(v) for v in context]
        payload = self._checked(
            self._client.post(f"{self._path}/predict", json={"context": x}), "POST predict"
        )
        return self._decision(payload, x)

    def learn(self, decision: Decision, feedback: Feedback) -> bool:
        """``POST /feedback`` with the loss, or the two losses of a two-point event."""
        body: dict[str, Any] = {"event_id": decision.event_id}
        if feedback.losses is not None:
            body["losses"] = list(feedback.losses)
        elif feedback.loss is not None:
            body["loss"] = feedback.loss
        else:
            raise ValueError("the service takes bandit feedback only (a loss or two losses)")
        self._checked(
            self._client.post(f"{self._path}/feedback", json=body), "POST feedback", (200, 202)
        )
        return True

    def predict(self, contexts: np.ndarray) -> np.ndarray:
        """Greedy actions / values for a batch, by batch predict requests."""
        key = "greedy_action" if self.task == "classification" else "greedy_value"
        out: list[float] = []
        for start in range(0, len(contexts), BATCH_SIZE):
            chunk = np.asarray(contexts[start : start + BATCH_SIZE], dtype=np.float64).tolist()
            payload = self._checked(
                self._client.post(f"{self._path}/predict", json={"contexts": chunk}),
                "POST predict (batch)",
            )
            out.extend(float(d[key]) for d in payload["decisions"])
        return np.asarray(out)

    def model_info(self) -> dict[str, Any]:
        """``GET /v1/models/{name}`` (config, version, counters)."""
        info: dict[str, Any] = self._checked(self._client.get(self._path), "GET")
        return info

    def close(self) -> None:
        """Delete the model and close the connection pool."""
        try:
            self._client.delete(self._path)
        finally:
            self._client.close()
