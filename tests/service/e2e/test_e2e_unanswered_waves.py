"""Unanswered decisions expire as fast as they arrive and their space is reused (issue
41, item 3), on a real server with the embedded store.

Round 3: at most 1,000 decisions a model expired per second (a fixed cap per sweep), so
after a million decisions with a 30 s wait 997,448 were still pending a minute after
the wait, and the file had reached 486 MB.  Here two waves of 30,000 unanswered
decisions (a 2 s wait): at most 1 % still pending 5 s after each wave's wait, and the
store after the second wave at most 1.3 x its size after the first (the full-size run
is ``python -m benchmarks.scale.unanswered_waves``: 150,000 twice, a 10 s wait, 25 s after).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from benchmarks.scale.unanswered_waves import run_waves
from tests.service.live_server import LiveServer

DECISIONS = 30_000


def test_two_waves_of_unanswered_decisions_expire_and_reuse_the_space(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    data_dir = tmp_path / "data"
    server = live_servers({"BANDITREE_DATA_DIR": str(data_dir), "BANDITREE_MAX_BATCH": "1000"})
    first, second = run_waves(
        server.url, data_dir, decisions=DECISIONS, wait_seconds=2.0, after_seconds=5.0,
        batch=1000,
    )  # fmt: skip
    assert first["pending"] <= 0.01 * DECISIONS, first
    assert second["pending"] <= 0.01 * DECISIONS, second
    assert second["store_bytes"] <= 1.3 * first["store_bytes"], (first, second)
