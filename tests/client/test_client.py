"""The client against scripted answers: retries, backoff, typed results, paging, errors."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable

import httpx
import pytest

from banditree.client import (
    AsyncClient,
    BanditreeError,
    Client,
    FeedbackResult,
    RetryPolicy,
    ServiceUnavailable,
)

FAST = RetryPolicy(attempts=4, backoff_seconds=0.0)
DECISION = {"event_id": "e1", "model_version": 3, "leaf": 5, "action": 2, "probability": 0.9,
            "greedy_action": 2}  # fmt: skip


def _scripted(answers: list[httpx.Response | Exception], seen: list[httpx.Request]) -> Callable[[httpx.Request], httpx.Response]:  # fmt: skip
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        answer = answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    return handle


def _client(answers: list[httpx.Response | Exception], seen: list[httpx.Request]) -> Client:
    transport = httpx.MockTransport(_scripted(answers, seen))
    return Client("http://svc", api_key="k", retry=FAST, transport=transport)


def test_predict_retries_503_and_connection_errors_then_returns_a_typed_result() -> None:
    seen: list[httpx.Request] = []
    answers: list[httpx.Response | Exception] = [
        httpx.Response(503, json={"detail": "store down"}),
        httpx.ConnectError("refused"),
        httpx.Response(200, json=DECISION),
    ]
    with _client(answers, seen) as client:
        decision = client.predict("m", [0.5, 1.0], default_action=1)
    assert decision.action == 2 and decision.probability == 0.9 and decision.leaf == 5
    assert len(seen) == 3
    assert seen[0].headers["authorization"] == "Bearer k"
    bodies = [json.loads(r.content) for r in seen]
    event_id = bodies[0].pop("event_id")  # made by the client, the same on every retry
    assert bodies[0] == {"context": [0.5, 1.0], "default_action": 1}
    assert len(event_id) == 36 and all(b["event_id"] == event_id for b in bodies[1:])


def test_exhausted_retries_raise_service_unavailable() -> None:
    seen: list[httpx.Request] = []
    with _client([httpx.Response(503)] * 4, seen) as client:
        with pytest.raises(ServiceUnavailable, match="no answer after 4 attempts"):
            client.get_model("m")
    assert len(seen) == 4


def test_a_repeated_feedback_is_reported_as_already_accepted() -> None:
    seen: list[httpx.Request] = []
    answers: list[httpx.Response | Exception] = [
        httpx.ReadError("connection reset"),  # the first answer is lost ...
        httpx.Response(409, json={"detail": "already", "field": "event_id"}),  # ... it landed
    ]
    with _client(answers, seen) as client:
        result = client.feedback("m", "e1", loss=0.0)
    assert result == FeedbackResult("e1", "already_accepted")
    assert [json.loads(r.content) for r in seen] == [{"event_id": "e1", "loss": 0.0}] * 2


def test_refusals_carry_the_status_detail_and_field() -> None:
    seen: list[httpx.Request] = []
    answer = httpx.Response(422, json={"detail": "context has 3 values", "field": "context"})
    with _client([answer], seen) as client:
        with pytest.raises(BanditreeError) as caught:
            client.predict("m", [1.0, 2.0, 3.0])
    assert (caught.value.status, caught.value.field) == (422, "context")
    assert len(seen) == 1  # a 4xx is not retried
    with pytest.raises(ValueError, match="exactly one of loss, reward or losses"):
        Client("http://svc").feedback("m", "e", loss=1.0, reward=0.0)


def test_export_log_retries_and_pages_on_with_the_last_offset() -> None:
    seen: list[httpx.Request] = []

    def page(offsets: list[int]) -> httpx.Response:
        lines = "".join(json.dumps({"offset": o, "event_id": str(o)}) + "\n" for o in offsets)
        return httpx.Response(200, content=lines.encode())

    answers = [httpx.Response(503), page([1, 2]), httpx.ConnectError("refused"), page([5])]
    with _client(answers, seen) as client:
        rows = list(client.export_log("m", until=9, page_rows=2))
    assert [r["offset"] for r in rows] == [1, 2, 5]
    assert seen[1].url.params["limit"] == "2" and "since" not in seen[1].url.params
    assert seen[3].url.params["since"] == "2" and seen[3].url.params["until"] == "9"


def test_async_client_retries_and_types_like_the_blocking_one() -> None:
    seen: list[httpx.Request] = []
    answers: list[httpx.Response | Exception] = [
        httpx.Response(503),
        httpx.Response(200, json={"decisions": [DECISION, {**DECISION, "event_id": "e2"}]}),
        httpx.Response(202, json={"status": "accepted", "event_id": "e1"}),
    ]
    handler = _scripted(answers, seen)

    async def run() -> tuple[list[str], FeedbackResult]:
        transport = httpx.MockTransport(handler)
        async with AsyncClient("http://svc", retry=FAST, transport=transport) as client:
            batch = await client.predict_batch("m", [[1.0], [2.0]], default_actions=[0, 1])
            fed = await client.feedback("m", "e1", reward=1.0)
        return [d.event_id for d in batch], fed

    ids, fed = asyncio.run(run())
    assert ids == ["e1", "e2"] and fed.status == "accepted"
    first, retried = (json.loads(r.content) for r in seen[:2])
    assert first == retried  # the same event ids on the retry
    assert len(set(retried.pop("event_ids"))) == 2
    assert retried == {"contexts": [[1.0], [2.0]], "default_actions": [0, 1]}
