"""``Client``: the service's HTTP API from Python (blocking, thread-safe)."""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping, Sequence
from types import TracebackType
from typing import Any

import httpx
import orjson

from banditree.client import wire
from banditree.client.errors import BanditreeError, ServiceUnavailable
from banditree.client.results import (
    CheckpointResult,
    FeedbackResult,
    ModelInfo,
    MultiSlotRankResult,
    PredictResult,
    RankResult,
)


class Client:
    """A blocking client of ``banditree serve``.

    Parameters
    ----------
    base_url
        The service, e.g. ``http://127.0.0.1:8000``.
    api_key
        Sent as ``Authorization: Bearer <key>`` (admin routes need an admin key).
    timeout_seconds
        Per-request timeout (connect, read, write and pool).
    retry
        Retries on 503/502/504 and connection errors (:class:`~banditree.client.wire.RetryPolicy`).
        Feedback is safe to retry: a repeat the service already accepted is reported as
        ``already_accepted``.
    max_connections
        Connection pool size (threads may share one client).

    Examples
    --------
    >>> with Client("http://127.0.0.1:8000", api_key="app-key") as client:  # doctest: +SKIP
    ...     d = client.predict("digits", context)
    ...     client.feedback("digits", d.event_id, loss=0.0)
    """

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        api_key: str | None = None,
        timeout_seconds: float = 10.0,
        retry: wire.RetryPolicy | None = None,
        max_connections: int = 64,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.retry = retry or wire.RetryPolicy()
        self._http = httpx.Client(
            transport=transport,
            **wire.http_options(base_url, api_key, timeout_seconds, max_connections),
        )

    # -- transport -------------------------------------------------------------------
    def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        """One request with retries; returns the last answer (any status but 503)."""
        last: Exception | None = None
        for attempt in range(self.retry.attempts):
            try:
                response = self._http.request(method, path, **kwargs)
            except httpx.TransportError as err:
                last = err
            else:
                if response.status_code not in wire.RETRY_STATUSES:
                    return response
                last = BanditreeError(response.status_code, response.text[:500])
            if attempt + 1 < self.retry.attempts:
                time.sleep(self.retry.delay_seconds(attempt))
        raise ServiceUnavailable(
            503, f"{method} {path}: no answer after {self.retry.attempts} attempts: {last}"
        )

    def _open_stream(self, path: str, params: dict[str, Any]) -> httpx.Response:
        """A streamed GET whose headers arrived (retried like :meth:`_send`); close it."""
        last: Exception | None = None
        for attempt in range(self.retry.attempts):
            try:
                request = self._http.build_request("GET", path, params=params)
                response = self._http.send(request, stream=True)
            except httpx.TransportError as err:
                last = err
            else:
                if response.status_code not in wire.RETRY_STATUSES:
                    return response
                response.close()
                last = BanditreeError(response.status_code, "service unavailable")
            if attempt + 1 < self.retry.attempts:
                time.sleep(self.retry.delay_seconds(attempt))
        raise ServiceUnavailable(
            503, f"GET {path}: no answer after {self.retry.attempts} attempts: {last}"
        )

    def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = self._send(method, path, **kwargs)
        wire.raise_for_answer(response)
        return response.json() if response.content else None

    # -- models ----------------------------------------------------------------------
    def create_model(self, name: str, config: dict[str, Any]) -> ModelInfo:
        """``PUT /v1/models/{name}``: a learner config plus optional service fields."""
        return ModelInfo.from_json(self._json("PUT", wire.model_path(name), json=config))

    def get_model(self, name: str) -> ModelInfo:
        """Config, version, counters, mode (and apprentice figures) of one model."""
        return ModelInfo.from_json(self._json("GET", wire.model_path(name)))

    def list_models(self) -> list[ModelInfo]:
        return [ModelInfo.from_json(m) for m in self._json("GET", "/v1/models")["models"]]

    def set_mode(self, name: str, mode: str) -> ModelInfo:
        """``PATCH /v1/models/{name}``: e.g. ``online`` ends apprentice mode."""
        return ModelInfo.from_json(self._json("PATCH", wire.model_path(name), json={"mode": mode}))

    def delete_model(self, name: str, *, missing_ok: bool = False) -> None:
        response = self._send("DELETE", wire.model_path(name))
        if missing_ok and response.status_code == 404:
            return
        wire.raise_for_answer(response)

    # -- decisions -------------------------------------------------------------------
    def predict(
        self,
        name: str,
        context: Sequence[float] | Mapping[str, Any],
        *,
        default_action: int | None = None,
        event_id: str | None = None,
    ) -> PredictResult:
        """One decision; ``default_action`` is what an apprentice-mode model plays.

        ``event_id``: the decision's id (None: a fresh one).  Every retry of the request
        sends the same id, so a retry of a predict the service already answered gets
        the decision it stored, counted once.
        """
        body = wire.predict_body(
            context, None, default_action, None, None if event_id is None else [event_id]
        )
        return PredictResult.from_json(
            self._json("POST", wire.model_path(name, "/predict"), json=body)
        )

    def predict_batch(
        self,
        name: str,
        contexts: Sequence[Sequence[float]] | Sequence[Mapping[str, Any]],
        *,
        default_actions: Sequence[int] | None = None,
        event_ids: Sequence[str] | None = None,
    ) -> list[PredictResult]:
        """One decision per context (one request); ``event_ids`` as :meth:`predict`'s
        ``event_id``, one per context."""
        body = wire.predict_body(
            None,
            list(contexts),
            None,
            None if default_actions is None else list(default_actions),
            event_ids,
        )
        payload = self._json("POST", wire.model_path(name, "/predict"), json=body)
        return [PredictResult.from_json(d) for d in payload["decisions"]]

    def feedback(
        self,
        name: str,
        event_id: str,
        *,
        loss: float | None = None,
        reward: float | None = None,
        losses: tuple[float, float] | None = None,
    ) -> FeedbackResult:
        """Report one decision's loss (or reward, or two-point losses)."""
        body = wire.feedback_body(event_id, loss, reward, losses)
        response = self._send("POST", wire.model_path(name, "/feedback"), json=body)
        return wire.feedback_result(response, event_id)

    # -- checkpoints and export ------------------------------------------------------
    # -- ranking -----------------------------------------------------------------------
    def rank(
        self,
        name: str,
        context: Any,
        actions: Sequence[Mapping[str, Any]] | Mapping[str, Any],
        *,
        excluded_actions: Sequence[str] | None = None,
        event_id: str | None = None,
        defer_activation: bool = False,
    ) -> RankResult:
        """Rank the candidates (``[{"id", "features"}]`` or ``{id: features}``) of a
        ranking model for ``context`` (an object of named features)."""
        body = wire.rank_body(context, actions, excluded_actions, event_id, defer_activation)
        return RankResult.from_json(self._json("POST", wire.model_path(name, "/rank"), json=body))

    def reward(self, name: str, event_id: str, value: float) -> FeedbackResult:
        """Report the reward (in [-1, 1], higher is better) of a ranking decision."""
        return self.feedback(name, event_id, reward=value)

    def activate(self, name: str, event_id: str) -> int:
        """Activate a deferred ranking decision: the decisions made learnable (0: already were)."""
        path = wire.model_path(name, f"/events/{event_id}/activate")
        return int((self._json("POST", path))["activated"])

    def rank_multi_slot(
        self,
        name: str,
        context: Any,
        actions: Sequence[Mapping[str, Any]] | Mapping[str, Any],
        slots: Sequence[Mapping[str, Any]] | Mapping[str, Any],
        *,
        event_id: str | None = None,
        defer_activation: bool = False,
    ) -> MultiSlotRankResult:
        """Fill ``slots`` (``[{"id", "features", "excluded_actions", "baseline_action"}]``
        or ``{slot id: features}``) in order without replacement from the candidates."""
        body = wire.multi_slot_body(context, actions, slots, event_id, defer_activation)
        path = wire.model_path(name, "/rank_multi_slot")
        return MultiSlotRankResult.from_json(self._json("POST", path, json=body))

    def reward_multi_slot(self, name: str, event_id: str, rewards: Mapping[str, float]) -> int:
        """One reward (in [-1, 1]) per slot id of a multi-slot event: the slots rewarded."""
        body = wire.multi_slot_rewards_body(rewards)
        path = wire.model_path(name, f"/events/{event_id}/reward_multi_slot")
        return int((self._json("POST", path, json=body))["rewarded"])

    def activate_multi_slot(self, name: str, event_id: str) -> int:
        """Activate every slot of a deferred multi-slot event: the slots made learnable."""
        path = wire.model_path(name, f"/events/{event_id}/activate_multi_slot")
        return int((self._json("POST", path))["activated"])

    def checkpoint(self, name: str) -> CheckpointResult:
        return CheckpointResult.from_json(self._json("POST", wire.model_path(name, "/checkpoints")))

    def tree(self, name: str) -> dict[str, Any]:
        """The served model as JSON (the hard tree for tree models), with its version."""
        out: dict[str, Any] = self._json("GET", wire.model_path(name, "/tree"))
        return out

    def export_log(
        self,
        name: str,
        *,
        since: int | None = None,
        until: int | None = None,
        page_rows: int = 10_000,
    ) -> Iterator[dict[str, Any]]:
        """Every joined log row with ``since < offset <= until``, streamed page by page."""
        while True:
            params = wire.log_page_params(since, until, page_rows)
            count = 0
            response = self._open_stream(wire.model_path(name, "/log"), params)
            try:
                if not response.is_success:
                    response.read()
                    wire.raise_for_answer(response)
                for line in response.iter_lines():
                    if line.strip():
                        row = orjson.loads(line)
                        since = int(row["offset"])
                        count += 1
                        yield row
            finally:
                response.close()
            if count < page_rows:
                return

    def health(self) -> bool:
        """True when ``/readyz`` answers 200."""
        try:
            return self._http.get("/readyz").status_code == 200
        except httpx.TransportError:
            return False

    # -- life cycle ------------------------------------------------------------------
    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()
