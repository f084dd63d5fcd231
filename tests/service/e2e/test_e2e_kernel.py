"""The active kernel, end to end: named by ``/healthz`` and ``/metrics``; a bad one refused.

A real uvicorn per setting (``BANDITREE_KERNEL`` is read once, at import, so each
setting needs its own process).
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from banditree.datasets import load
from tests.service.live_server import LiveServer

MODEL = "/v1/models/digits"


@pytest.mark.parametrize("kernel", ["native", "reference"])
def test_kernel_named_and_used(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path, kernel: str
) -> None:
    server = live_servers(
        {"BANDITREE_DATA_DIR": str(tmp_path / "data"), "BANDITREE_KERNEL": kernel}
    )
    ds = load("pendigits")
    with server.client() as http:
        assert http.get("/healthz").json() == {"status": "ok", "kernel": kernel}
        http.put(
            MODEL, json={"kind": "dgt", "n_features": ds.n_features, "n_actions": ds.n_classes},
        ).raise_for_status()  # fmt: skip
        decisions = http.post(f"{MODEL}/predict", json={"contexts": ds.X_test[:8].tolist()})
        decisions.raise_for_status()
        assert len(decisions.json()["decisions"]) == 8
        metrics = http.get("/metrics").text
    assert f'banditree_kernel_info{{kernel="{kernel}"}} 1.0' in metrics
    other = "reference" if kernel == "native" else "native"
    assert f'kernel="{other}"' not in metrics
    if kernel == "reference":
        assert "kernel: reference" in server.log_text()


def test_unknown_kernel_refuses_to_start(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    with pytest.raises(RuntimeError, match="server exited early") as err:
        live_servers({"BANDITREE_DATA_DIR": str(tmp_path / "data"), "BANDITREE_KERNEL": "fast"})
    text = str(err.value)
    assert "kernel unavailable" in text and "refusing to start" in text
    assert "BANDITREE_KERNEL=reference" in text
