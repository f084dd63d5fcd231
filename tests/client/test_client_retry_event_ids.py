"""The client's retries are idempotent (issue 41, item 6), against a real server.

The first answer of a predict is lost after the server stored its decision (a timeout
on the way back); the client retries the same body, with the event ids it made, and
gets the stored decisions: counted once, as the e2e learning test needs (it once
counted 2,010 predictions for 2,000 rounds on a loaded machine).
"""

from __future__ import annotations

import json
import signal
from pathlib import Path

import httpx
import pytest

from banditree.client import Client
from banditree.client.errors import BanditreeError
from banditree.client.wire import RetryPolicy
from tests.service.live_server import LiveServer


class LoseFirstAnswer(httpx.BaseTransport):
    """A real transport whose first answer on a path ending in ``route`` is received,
    then lost (a timeout)."""

    def __init__(self, route: str = "/predict") -> None:
        self.inner = httpx.HTTPTransport()
        self.route = route
        self.lost: list[bytes] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.url.path.endswith(self.route) and not self.lost:
            response.read()
            self.lost.append(request.content)
            raise httpx.ReadTimeout("the answer was lost", request=request)
        return response

    def close(self) -> None:
        self.inner.close()


def test_a_retried_predict_gets_the_stored_decisions_counted_once(tmp_path: Path) -> None:
    server = LiveServer({"BANDITREE_DATA_DIR": str(tmp_path / "data")}, log_path=tmp_path / "s.log")
    try:
        for batch in (False, True):
            transport = LoseFirstAnswer()
            retry = RetryPolicy(attempts=3, backoff_seconds=0.01)
            with Client(server.url, retry=retry, transport=transport) as client:
                name = f"m{int(batch)}"
                client.create_model(name, {"n_features": 2, "n_actions": 3})
                if batch:
                    decisions = client.predict_batch(name, [[0.1, 0.2], [0.3, 0.4], [0.5, 0.6]])
                else:
                    decisions = [client.predict(name, [0.1, 0.2])]
                assert len(transport.lost) == 1  # the first answer was lost, then retried
                assert client.get_model(name).raw["counters"]["predictions"] == len(decisions)
                for d in decisions:  # each stored decision takes its feedback
                    assert client.feedback(name, d.event_id, loss=0.5).status == "accepted"
    finally:
        server.stop(signal.SIGTERM)


def test_a_retried_multi_slot_rank_gets_the_stored_answer_counted_once(tmp_path: Path) -> None:
    """A multi-slot rank retried with its event id answered 409 (issue 41); it now gets
    the slots stored the first time, as a single-slot rank does."""
    server = LiveServer({"BANDITREE_DATA_DIR": str(tmp_path / "data")}, log_path=tmp_path / "s.log")
    actions = {f"a{i}": {"x": float(i)} for i in range(5)}
    slots = [{"id": "top"}, {"id": "side", "excluded_actions": ["a0"]}, {"id": "foot"}]
    try:
        for route in ("/rank_multi_slot", "/rank"):
            transport = LoseFirstAnswer(route)
            retry = RetryPolicy(attempts=3, backoff_seconds=0.01)
            with Client(server.url, retry=retry, transport=transport) as client:
                name = {"/rank": "single", "/rank_multi_slot": "slots"}[route]
                client.create_model(name, {"task": "ranking"})
                if route == "/rank":
                    ranked = client.rank(name, {"u": 1.0}, actions)
                    assert len(transport.lost) == 1  # the first answer lost, then retried
                    assert client.get_model(name).raw["counters"]["predictions"] == 1
                    assert client.reward(name, ranked.event_id, 1.0).status == "accepted"
                    continue
                answer = client.rank_multi_slot(name, {"u": 1.0}, actions, slots)
                assert len(transport.lost) == 1
                lost = json.loads(transport.lost[0])
                assert answer.event_id == lost["event_id"]
                assert [s.id for s in answer.slots] == ["top", "side", "foot"]
                assert client.get_model(name).raw["counters"]["predictions"] == 3
                rewards = {s.id: 1.0 for s in answer.slots}
                assert client.reward_multi_slot(name, answer.event_id, rewards) == 3
                with pytest.raises(BanditreeError) as settled:  # its decisions are not kept
                    client.rank_multi_slot(
                        name, {"u": 1.0}, actions, slots, event_id=answer.event_id
                    )
                assert (settled.value.status, settled.value.field) == (409, "event_id")
    finally:
        server.stop(signal.SIGTERM)
