"""The client's retries are idempotent (issue 41, item 6), against a real server.

The first answer of a predict is lost after the server stored its decision (a timeout
on the way back); the client retries the same body, with the event ids it made, and
gets the stored decisions: counted once, as the e2e learning test needs (it once
counted 2,010 predictions for 2,000 rounds on a loaded machine).
"""

from __future__ import annotations

import signal
from pathlib import Path

import httpx

from banditree.client import Client
from banditree.client.wire import RetryPolicy
from tests.service.live_server import LiveServer


class LoseFirstAnswer(httpx.BaseTransport):
    """A real transport whose first predict answer is received, then lost (a timeout)."""

    def __init__(self) -> None:
        self.inner = httpx.HTTPTransport()
        self.lost: list[bytes] = []

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        response = self.inner.handle_request(request)
        if request.url.path.endswith("/predict") and not self.lost:
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
