"""A full disk under the embedded store (issue 41, item 2), on a real server.

Round 3 found the service filling its own 20 MB disk with 2 MB checkpoints (20 kept),
the learner stalled, and ``/readyz`` answering 200 throughout.  Here checkpoints stay
within ``BANDITREE_CHECKPOINT_KEEP_BYTES``; a disk taken by something else past
``BANDITREE_MIN_FREE_BYTES`` makes ``/readyz`` answer 503 within 5 s; nothing
acknowledged is lost; and within 5 s of the space returning ``/readyz`` answers 200 and
the served model has learned every acknowledged feedback.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import httpx
import numpy as np

from tests.service.live_server import LiveServer
from tests.service.small_fs import fill, small_fs

MODEL = {"kind": "dgt", "n_features": 400, "n_actions": 4, "height": 8}
BUDGET = 3 << 20  # about 3 of this model's checkpoints (0.85 MB each)
GUARD = 4 << 20


def _pairs(http: httpx.Client, rng: np.random.Generator, count: int) -> int:
    """``count`` predicts and their feedback: how many feedbacks were acknowledged."""
    acked = 0
    for _ in range(count):
        decided = http.post("/v1/models/m/predict", json={"context": rng.normal(size=400).tolist()})
        assert decided.status_code == 200, decided.text
        if decided.json().get("logged") is False:
            continue
        answer = http.post("/v1/models/m/feedback",
                           json={"event_id": decided.json()["event_id"], "loss": 0.5})  # fmt: skip
        assert answer.status_code in (200, 503), answer.text
        acked += answer.status_code == 200
    return acked


def _checkpoint_bytes(http: httpx.Client) -> int:
    listed = http.get("/v1/models/m/checkpoints").json()["checkpoints"]
    return sum(c["size_bytes"] for c in listed)


def _unready(http: httpx.Client) -> bool:
    return http.get("/readyz").status_code == 503


def _within(seconds: float, done: Callable[[], bool]) -> float:
    """Poll ``done`` until true: the seconds it took (fails past ``seconds``)."""
    started = time.monotonic()
    while not done():
        assert time.monotonic() - started < seconds, f"not within {seconds} s"
        time.sleep(0.05)
    return time.monotonic() - started


def test_a_full_disk_is_told_and_the_learner_catches_up(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    with small_fs(tmp_path / "fs", 24) as fs:
        server = live_servers({
            "BANDITREE_DATA_DIR": str(fs / "data"), "BANDITREE_CHECKPOINT_KEEP": "20",
            "BANDITREE_CHECKPOINT_KEEP_BYTES": str(BUDGET), "BANDITREE_MIN_FREE_BYTES": str(GUARD),
            "BANDITREE_CHECKPOINT_EVERY_SECONDS": "0.1",
        })  # fmt: skip
        rng = np.random.default_rng(0)
        with server.client() as http:
            assert http.put("/v1/models/m", json=MODEL).status_code == 201
            acked = _pairs(http, rng, 60)
            assert acked == 60
            assert _checkpoint_bytes(http) <= BUDGET
            # something else takes the disk past the guard (and keeps taking what the
            # store gives back, as its WAL starts over)
            filler = fill(fs, GUARD // 2)
            _within(5.0, lambda: bool(fill(fs, GUARD // 2)) and _unready(http))
            acked += _pairs(http, rng, 20)  # answered; feedback 200 while the file has room
            assert _checkpoint_bytes(http) <= BUDGET
            filler.unlink()  # space returns
            _within(5.0, lambda: http.get("/readyz").status_code == 200)
            _within(5.0, lambda: http.get("/v1/models/m").json()["counters"]["feedback"] == acked)
            assert _checkpoint_bytes(http) <= BUDGET
            # full to the last bytes: nothing can be written, feedback answers 503
            acked += _pairs(http, rng, 20)
            filler = fill(fs, 0)
            acked += _pairs(http, rng, 20)  # 503 or unlogged (no 500), once the file is full
            _within(5.0, lambda: bool(fill(fs, 0)) and _unready(http))
            filler.unlink()
            _within(5.0, lambda: http.get("/readyz").status_code == 200)
            _within(5.0, lambda: http.get("/v1/models/m").json()["counters"]["feedback"] == acked)
            assert _checkpoint_bytes(http) <= BUDGET
