"""HTTP mode against a live ``banditree serve`` (started here as a subprocess)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from simulate import SimulationOptions, simulate
from tests.service.live_server import free_port
from tests.simulate.conftest import check_report


@pytest.fixture(scope="module")
def live_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    pytest.importorskip(
        "service", reason="the service package (banditree serve) is not in this checkout"
    )
    import httpx

    tmp_path = tmp_path_factory.mktemp("serve")
    port = free_port()
    env = {**os.environ, "BANDITREE_DATA_DIR": str(tmp_path / "service-data")}
    env.pop("BANDITREE_REDIS_URL", None)  # the embedded store
    log = (tmp_path / "serve.log").open("w")
    proc = subprocess.Popen(
        [sys.executable, "-m", "banditree", "serve", "--host", "127.0.0.1", "--port", str(port)],
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if proc.poll() is not None:
                pytest.fail(
                    f"banditree serve exited: {(tmp_path / 'serve.log').read_text()[-2000:]}"
                )
            try:
                if httpx.get(f"{url}/healthz", timeout=1).status_code == 200:
                    break
            except httpx.TransportError:
                pass
            if time.monotonic() > deadline:
                pytest.fail("banditree serve did not answer /healthz within 60 s")
            time.sleep(0.2)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        log.close()


def _simulate_over_http(server: str, out: Path, **options: Any) -> dict[str, Any]:
    """A short two-seed run of ``dgt`` against ``server``."""
    return simulate(
        SimulationOptions(
            model="dgt", out=out, seeds=2, eval_points=3, server=server, progress=False, **options
        )
    )


def test_http_mode_gives_the_same_kind_of_report(live_server: str, tmp_path: Path) -> None:
    report = _simulate_over_http(
        live_server,
        tmp_path / "run",
        data="wine",
        rounds=150,
        baselines=["random", "linear"],
        config={"learning_rate": 1e-2},
        concurrency=4,
    )
    check_report(
        tmp_path / "run",
        task="classification",
        learners={"dgt", "dgt_full_information", "random", "linear"},
        n_seeds=2,
    )
    assert report["server"] == live_server and report["concurrency"] == 4
    assert report["learners"]["dgt"]["rounds_total"] == 150


def test_http_mode_two_point_regression(live_server: str, tmp_path: Path) -> None:
    report = _simulate_over_http(
        live_server,
        tmp_path / "run",
        data="diabetes",
        rounds=100,
        baselines=[],
        feedback="two_point",
        config={"delta": 5.0},
        concurrency=2,
    )
    check_report(
        tmp_path / "run", task="regression", learners={"dgt", "dgt_full_information"}, n_seeds=2
    )
    assert report["learners"]["dgt"]["queries_total"] == 200
