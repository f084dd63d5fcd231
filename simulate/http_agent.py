"""A model behind a running ``banditree serve``, driven through :class:`banditree.client.Client`.

``PUT /v1/models/{name}`` creates the model from a learner configuration,
``POST .../predict`` decides, ``POST .../feedback`` reports the loss(es), and the
held-out split is scored with batch predictions (their greedy action / value).
The model is deleted when the run is over.  The client is thread-safe, so rounds
may run concurrently (``--concurrency``); it retries 503 answers and connection
errors, and a retried feedback the service already accepted counts as accepted.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import numpy as np

from banditree.client import Client, PredictResult
from banditree.core.codec import decision_from_public
from banditree.learners import Decision, Feedback

#: Contexts per batch predict request when scoring the held-out split.
BATCH_SIZE = 256
#: Held-out predictions create events that never get feedback; they expire after this.
EVENT_TTL_SECONDS = 600


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
        Sent as ``Authorization: Bearer <key>``.
    timeout_seconds
        Per-request timeout.
    keep
        Leave the model on the service at :meth:`close` (to look at it in the console).
    """

    def __init__(
        self,
        server: str,
        name: str,
        config: dict[str, Any],
        *,
        api_key: str | None = None,
        timeout_seconds: float = 30.0,
        keep: bool = False,
    ) -> None:
        self.name = name
        self.keep = keep
        self.task = config.get("task", "classification")
        self._client = Client(server, api_key=api_key, timeout_seconds=timeout_seconds)
        self._client.delete_model(name, missing_ok=True)  # a stale model of a previous run
        self._client.create_model(name, {**config, "event_ttl_seconds": EVENT_TTL_SECONDS})

    @staticmethod
    def _decision(answer: PredictResult, context: Sequence[float]) -> Decision:
        return decision_from_public(asdict(answer), context)

    def act(self, context: Sequence[float] | np.ndarray, event_id: str | None = None) -> Decision:
        """``POST /predict`` with one context (the service assigns the event id)."""
        x = [float(v) for v in context]
        return self._decision(self._client.predict(self.name, x), x)

    def learn(self, decision: Decision, feedback: Feedback) -> bool:
        """``POST /feedback`` with the loss, or the two losses of a two-point event."""
        if feedback.losses is None and feedback.loss is None:
            raise ValueError("the service takes bandit feedback only (a loss or two losses)")
        self._client.feedback(
            self.name, decision.event_id, loss=feedback.loss, losses=feedback.losses
        )
        return True

    def predict(self, contexts: np.ndarray) -> np.ndarray:
        """Greedy actions / values for a batch, by batch predict requests."""
        classification = self.task == "classification"
        out: list[float] = []
        for start in range(0, len(contexts), BATCH_SIZE):
            chunk = np.asarray(contexts[start : start + BATCH_SIZE], dtype=np.float64).tolist()
            for d in self._client.predict_batch(self.name, chunk):
                out.append(float((d.greedy_action if classification else d.greedy_value) or 0.0))
        return np.asarray(out)

    def model_info(self) -> dict[str, Any]:
        """``GET /v1/models/{name}`` (config, version, counters)."""
        return self._client.get_model(self.name).raw

    def close(self) -> None:
        """Delete the model (unless kept) and close the connection pool."""
        try:
            if not self.keep:
                self._client.delete_model(self.name, missing_ok=True)
        finally:
            self._client.close()
