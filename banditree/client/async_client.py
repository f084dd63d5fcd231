"""``AsyncClient``: the service's HTTP API for asyncio code (same calls as ``Client``)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping, Sequence
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


class AsyncClient:
    """An asyncio client of ``banditree serve``; parameters as :class:`~banditree.client.Client`."""

    def __init__(
        self,
        base_url: str = "http://127.0.0.1:8000",
        *,
        api_key: str | None = None,
        timeout_seconds: float = 10.0,
        retry: wire.RetryPolicy | None = None,
        max_connections: int = 64,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.retry = retry or wire.RetryPolicy()
        self._http = httpx.AsyncClient(
            transport=transport,
            **wire.http_options(base_url, api_key, timeout_seconds, max_connections),
        )

    async def _send(self, method: str, path: str, **kwargs: Any) -> httpx.Response:
        last: Exception | None = None
        for attempt in range(self.retry.attempts):
            try:
                response = await self._http.request(method, path, **kwargs)
            except httpx.TransportError as err:
                last = err
            else:
                if response.status_code not in wire.RETRY_STATUSES:
                    return response
                last = BanditreeError(response.status_code, response.text[:500])
            if attempt + 1 < self.retry.attempts:
                await asyncio.sleep(self.retry.delay_seconds(attempt))
        raise ServiceUnavailable(
            503, f"{method} {path}: no answer after {self.retry.attempts} attempts: {last}"
        )

    async def _open_stream(self, path: str, params: dict[str, Any]) -> httpx.Response:
        """A streamed GET whose headers arrived (retried like :meth:`_send`); close it."""
        last: Exception | None = None
        for attempt in range(self.retry.attempts):
            try:
                request = self._http.build_request("GET", path, params=params)
                response = await self._http.send(request, stream=True)
            except httpx.TransportError as err:
                last = err
            else:
                if response.status_code not in wire.RETRY_STATUSES:
                    return response
                await response.aclose()
                last = BanditreeError(response.status_code, "service unavailable")
            if attempt + 1 < self.retry.attempts:
                await asyncio.sleep(self.retry.delay_seconds(attempt))
        raise ServiceUnavailable(
            503, f"GET {path}: no answer after {self.retry.attempts} attempts: {last}"
        )

    async def _json(self, method: str, path: str, **kwargs: Any) -> Any:
        response = await self._send(method, path, **kwargs)
        wire.raise_for_answer(response)
        return response.json() if response.content else None

    async def create_model(self, name: str, config: dict[str, Any]) -> ModelInfo:
        """``PUT /v1/models/{name}``."""
        return ModelInfo.from_json(await self._json("PUT", wire.model_path(name), json=config))

    async def get_model(self, name: str) -> ModelInfo:
        return ModelInfo.from_json(await self._json("GET", wire.model_path(name)))

    async def list_models(self) -> list[ModelInfo]:
        payload = await self._json("GET", "/v1/models")
        return [ModelInfo.from_json(m) for m in payload["models"]]

    async def set_mode(self, name: str, mode: str) -> ModelInfo:
        """``PATCH /v1/models/{name}``: e.g. ``online`` ends apprentice mode."""
        payload = await self._json("PATCH", wire.model_path(name), json={"mode": mode})
        return ModelInfo.from_json(payload)

    async def delete_model(self, name: str, *, missing_ok: bool = False) -> None:
        response = await self._send("DELETE", wire.model_path(name))
        if missing_ok and response.status_code == 404:
            return
        wire.raise_for_answer(response)

    async def predict(
        self,
        name: str,
        context: Sequence[float] | Mapping[str, Any],
        *,
        default_action: int | None = None,
        event_id: str | None = None,
    ) -> PredictResult:
        body = wire.predict_body(
            context, None, default_action, None, None if event_id is None else [event_id]
        )
        payload = await self._json("POST", wire.model_path(name, "/predict"), json=body)
        return PredictResult.from_json(payload)

    async def predict_batch(
        self,
        name: str,
        contexts: Sequence[Sequence[float]] | Sequence[Mapping[str, Any]],
        *,
        default_actions: Sequence[int] | None = None,
        event_ids: Sequence[str] | None = None,
    ) -> list[PredictResult]:
        body = wire.predict_body(
            None,
            list(contexts),
            None,
            None if default_actions is None else list(default_actions),
            event_ids,
        )
        payload = await self._json("POST", wire.model_path(name, "/predict"), json=body)
        return [PredictResult.from_json(d) for d in payload["decisions"]]

    async def feedback(
        self,
        name: str,
        event_id: str,
        *,
        loss: float | None = None,
        reward: float | None = None,
        losses: tuple[float, float] | None = None,
    ) -> FeedbackResult:
        body = wire.feedback_body(event_id, loss, reward, losses)
        response = await self._send("POST", wire.model_path(name, "/feedback"), json=body)
        return wire.feedback_result(response, event_id)

    # -- ranking -----------------------------------------------------------------------
    async def rank(
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
        return RankResult.from_json(
            await self._json("POST", wire.model_path(name, "/rank"), json=body)
        )

    async def reward(self, name: str, event_id: str, value: float) -> FeedbackResult:
        """Report the reward (in [-1, 1], higher is better) of a ranking decision."""
        return await self.feedback(name, event_id, reward=value)

    async def activate(self, name: str, event_id: str) -> int:
        """Activate a deferred ranking decision: the decisions made learnable (0: already were)."""
        path = wire.model_path(name, f"/events/{event_id}/activate")
        return int((await self._json("POST", path))["activated"])

    async def rank_multi_slot(
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
        return MultiSlotRankResult.from_json(await self._json("POST", path, json=body))

    async def reward_multi_slot(
        self, name: str, event_id: str, rewards: Mapping[str, float]
    ) -> int:
        """One reward (in [-1, 1]) per slot id of a multi-slot event: the slots rewarded."""
        body = wire.multi_slot_rewards_body(rewards)
        path = wire.model_path(name, f"/events/{event_id}/reward_multi_slot")
        return int((await self._json("POST", path, json=body))["rewarded"])

    async def activate_multi_slot(self, name: str, event_id: str) -> int:
        """Activate every slot of a deferred multi-slot event: the slots made learnable."""
        path = wire.model_path(name, f"/events/{event_id}/activate_multi_slot")
        return int((await self._json("POST", path))["activated"])

    async def checkpoint(self, name: str) -> CheckpointResult:
        payload = await self._json("POST", wire.model_path(name, "/checkpoints"))
        return CheckpointResult.from_json(payload)

    async def tree(self, name: str) -> dict[str, Any]:
        out: dict[str, Any] = await self._json("GET", wire.model_path(name, "/tree"))
        return out

    async def export_log(
        self,
        name: str,
        *,
        since: int | None = None,
        until: int | None = None,
        page_rows: int = 10_000,
    ) -> AsyncIterator[dict[str, Any]]:
        """Every joined log row with ``since < offset <= until``, streamed page by page."""
        while True:
            params = wire.log_page_params(since, until, page_rows)
            count = 0
            response = await self._open_stream(wire.model_path(name, "/log"), params)
            try:
                if not response.is_success:
                    await response.aread()
                    wire.raise_for_answer(response)
                async for line in response.aiter_lines():
                    if line.strip():
                        row = orjson.loads(line)
                        since = int(row["offset"])
                        count += 1
                        yield row
            finally:
                await response.aclose()
            if count < page_rows:
                return

    async def health(self) -> bool:
        try:
            return (await self._http.get("/readyz")).status_code == 200
        except httpx.TransportError:
            return False

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> AsyncClient:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
