"""SIGTERM under predict + feedback load (Redis store): the process stops, nothing is lost."""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path

import httpx

from banditree.client import Client
from tests.service.live_server import LiveServer
from tests.service.own_redis import OwnRedis

MODEL = "m"
N_FEATURES = 4
SHUTDOWN_SECONDS = 5.0
CLIENTS = 6


def start_server(redis_port: int, log_path: Path) -> LiveServer:
    return LiveServer(
        {
            "BANDITREE_REDIS_URL": f"redis://127.0.0.1:{redis_port}/0",
            "BANDITREE_API_KEYS": "",
            "BANDITREE_ADMIN_KEYS": "",
            "BANDITREE_SHUTDOWN_SECONDS": str(SHUTDOWN_SECONDS),
            # every checkpoint kept: retention never trims the log this test reads back
            "BANDITREE_CHECKPOINT_KEEP": "100000",
            "BANDITREE_SWEEP_INTERVAL_SECONDS": "0.05",
            "BANDITREE_SNAPSHOT_POLL_SECONDS": "0.05",
        },
        log_path=log_path,
    )


class Load(threading.Thread):
    """Predict + feedback pairs (single and batch) until told to stop; keeps the acknowledged."""

    def __init__(self, url: str, seed: int) -> None:
        super().__init__(daemon=True)
        self.url, self.seed = url, seed
        self.acked: dict[str, float] = {}  # event id -> loss, feedback answered 200
        self.stopping = threading.Event()

    def run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30.0) as http:
            i = 0
            while not self.stopping.is_set():
                i += 1
                body: dict[str, object] = (
                    {"contexts": [[float(self.seed), float(i), 0.5, -1.0]] * 8}
                    if i % 4 == 0
                    else {"context": [float(self.seed), float(i), 0.5, -1.0]}
                )
                try:
                    answer = http.post(f"/v1/models/{MODEL}/predict", json=body)
                    if answer.status_code != 200:
                        continue
                    decisions = answer.json().get("decisions") or [answer.json()]
                    for decision in decisions:
                        loss = float(i % 3 == 0)
                        reply = http.post(
                            f"/v1/models/{MODEL}/feedback",
                            json={"event_id": decision["event_id"], "loss": loss},
                        )
                        if reply.status_code == 200:
                            self.acked[decision["event_id"]] = loss
                except httpx.TransportError:
                    time.sleep(0.01)  # the server is going away


def test_sigterm_under_load_stops_in_time_and_loses_no_feedback(
    own_redis: OwnRedis, tmp_path: Path
) -> None:
    acked: dict[str, float] = {}
    for run in range(3):  # the shutdown races differ run to run
        server = start_server(own_redis.port, tmp_path / f"server-{run}.log")
        try:
            if run == 0:
                with Client(server.url) as client:
                    client.create_model(
                        MODEL, {"kind": "dgt", "n_features": N_FEATURES, "n_actions": 3}
                    )
            loads = [Load(server.url, seed) for seed in range(CLIENTS)]
            for load in loads:
                load.start()
            time.sleep(1.5)
            served = sum(len(load.acked) for load in loads)
            assert served > 0, server.log_text()[-3000:]
            started = time.monotonic()
            code = server.stop(signal.SIGTERM)
            stopped_in = time.monotonic() - started
            for load in loads:
                load.stopping.set()
            for load in loads:
                load.join(timeout=30)
                acked.update(load.acked)
            # uvicorn exits by re-raising the SIGTERM it handled (or with 0)
            assert code in (0, -signal.SIGTERM), (code, server.log_text()[-3000:])
            assert stopped_in < 2 * SHUTDOWN_SECONDS, (stopped_in, server.log_text()[-3000:])
            assert "did not stop" not in server.log_text(), server.log_text()[-3000:]
            assert "Traceback" not in server.log_text(), server.log_text()[-3000:]
        finally:
            if server.process.poll() is None:
                server.stop(signal.SIGKILL)
    server = start_server(own_redis.port, tmp_path / "server-after.log")
    try:
        with Client(server.url) as client:
            logged = {
                row["event_id"]: row["loss"]
                for row in client.export_log(MODEL)
                if row.get("loss") is not None
            }
        missing = set(acked) - set(logged)
        assert not missing, f"{len(missing)} of {len(acked)} acknowledged feedbacks lost"
        assert all(logged[event_id] == loss for event_id, loss in acked.items())
    finally:
        server.stop(signal.SIGKILL)
