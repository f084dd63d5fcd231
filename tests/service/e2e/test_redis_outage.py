"""A Redis of the test's own, killed and then frozen (SIGSTOP) under traffic.

Every call is answered within a second, never with a 5xx other than 503 (in the one
error model), ``/healthz`` and ``/metrics`` keep answering, and once Redis is back the
same server process predicts and takes feedback again without a restart.
"""

from __future__ import annotations

import signal
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.service.live_server import LiveServer
from tests.service.own_redis import OwnRedis, needs_redis_server

pytestmark = needs_redis_server

ADMIN = "outage-admin"
CONTEXT = [0.1, 0.2, 0.3, 0.4]
ANSWER_SECONDS = 1.0  # a call not answered within this raises httpx.TimeoutException


def calls(http: httpx.Client, event_id: str) -> list[httpx.Response]:
    """One of every kind of call a client makes, on a known and an unknown model."""
    return [
        http.post("/v1/models/m/predict", json={"context": CONTEXT}),
        http.post("/v1/models/m/feedback", json={"event_id": event_id, "loss": 0.5}),
        http.get("/v1/models/m"),
        http.get("/v1/models/unknown"),
        http.get("/v1/models/m/checkpoints"),
        http.post("/v1/models/m/checkpoints"),
        http.post("/v1/models/m/rollback", json={"version": 0}),
        http.put("/v1/models/other", json={"n_features": 4, "n_actions": 3}),
        http.get("/v1/models"),
        http.get("/readyz"),
    ]


def assert_no_5xx_but_503(answers: list[httpx.Response]) -> int:
    """Every answer is below 500 or a 503 in the error model; the number of 503s."""
    unavailable = 0
    for answer in answers:
        assert answer.status_code < 500 or answer.status_code == 503, answer.text
        if answer.status_code == 503:
            assert isinstance(answer.json()["detail"], str), answer.text
            unavailable += 1
    return unavailable


def recovered(http: httpx.Client) -> str:
    """Wait until predictions work again; the event id of one."""
    deadline = time.monotonic() + 20
    while True:
        answer = http.post("/v1/models/m/predict", json={"context": CONTEXT})
        if answer.status_code == 200:
            event_id: str = answer.json()["event_id"]
            return event_id
        assert answer.status_code == 503 and time.monotonic() < deadline, answer.text
        time.sleep(0.1)


def server_env(redis_port: int) -> dict[str, str]:
    return {
        "BANDITREE_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
        "BANDITREE_API_KEYS": "",
        "BANDITREE_ADMIN_KEYS": ADMIN,
        "BANDITREE_REDIS_TIMEOUT_SECONDS": "0.3",
    }


def at_once(url: str, event_id: str, clients: int = 8) -> list[httpx.Response]:
    """Calls from ``clients`` clients at the same time: none waits for another's store calls.

    Several of them wait on the same store (a pooled connection, the registry's lock for
    models not loaded): each is still answered within ``ANSWER_SECONDS``.
    """

    def one_client(i: int) -> list[httpx.Response]:
        headers = {"Authorization": f"Bearer {ADMIN}"}
        with httpx.Client(base_url=url, headers=headers, timeout=ANSWER_SECONDS) as http:
            return [
                http.get(f"/v1/models/unknown-{i}"),
                http.post("/v1/models/m/feedback", json={"event_id": event_id, "loss": 0.5}),
                http.put(f"/v1/models/new-{i}", json={"n_features": 4, "n_actions": 3}),
                http.post("/v1/models/m/predict", json={"context": CONTEXT}),
                http.delete(f"/v1/models/unknown-{i}"),
            ]

    with ThreadPoolExecutor(clients) as pool:
        return [answer for answers in pool.map(one_client, range(clients)) for answer in answers]


def feedback_once_recovered(http: httpx.Client, event_id: str) -> httpx.Response:
    """Feedback, retried on 503 while the server writes back what an empty Redis lost."""
    deadline = time.monotonic() + 10
    while True:
        answer = http.post("/v1/models/m/feedback", json={"event_id": event_id, "loss": 0.5})
        if answer.status_code != 503 or time.monotonic() > deadline:
            return answer
        time.sleep(0.1)


def test_redis_killed_then_frozen_answers_503_fast_and_recovers(
    own_redis: OwnRedis, tmp_path: Path
) -> None:
    server = LiveServer(server_env(own_redis.port), log_path=tmp_path / "server.log")
    try:
        with httpx.Client(
            base_url=server.url,
            headers={"Authorization": f"Bearer {ADMIN}"},
            timeout=ANSWER_SECONDS,
        ) as http:
            http.put("/v1/models/m", json={"n_features": 4, "n_actions": 3, "accumulate": 1})
            event_id = recovered(http)
            for outage in (signal.SIGKILL, signal.SIGSTOP):
                own_redis.signal(outage)
                during = calls(http, event_id) + calls(http, event_id)
                deleted = http.delete("/v1/models/m")  # refused, and nothing changes
                assert deleted.status_code == 503, deleted.text
                during += at_once(server.url, event_id)
                assert http.get("/healthz").status_code == 200
                assert http.get("/metrics").status_code == 200
                assert assert_no_5xx_but_503(during) >= 4, outage  # at least the store-only calls
                assert http.get("/v1/models/unknown").status_code == 503
                ready = http.get("/readyz")  # a served model keeps predicting: degraded
                assert ready.status_code == 200 and ready.json()["status"] == "degraded"

                if outage == signal.SIGKILL:
                    own_redis.start()  # empty: it kept nothing
                else:
                    own_redis.signal(signal.SIGCONT)
                event_id = recovered(http)
                fed = feedback_once_recovered(http, event_id)
                assert fed.status_code == 200, fed.text
                assert http.get("/readyz").json()["status"] == "ready"
                assert http.get("/v1/models/unknown").status_code == 404
                assert http.get("/v1/models/m").status_code == 200  # the refused DELETE
                event_id = recovered(http)
            assert http.delete("/v1/models/m").status_code == 204  # now it goes through
            assert http.get("/v1/models/m").status_code == 404
        assert "Traceback" not in server.log_text(), server.log_text()[-4000:]
        server.stop(signal.SIGKILL)
        server = LiveServer(server_env(own_redis.port), log_path=tmp_path / "server-2.log")
        with server.client(ADMIN) as http:  # and stays deleted
            assert http.get("/v1/models/m").status_code == 404
            assert http.get("/v1/models").json()["models"] == []
    finally:
        server.stop(signal.SIGKILL)
