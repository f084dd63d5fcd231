"""The console tutorial's flow in a browser: simulator traffic, then the loss and the tree."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.console.conftest import ADMIN_KEY, ROOT, shot
from tests.service.live_server import LiveServer

MODEL = "sim-digits-dgt-s0"


def test_simulator_traffic_shows_the_loss_falling(
    console: Any, server: LiveServer, admin: httpx.Client, tmp_path: Path
) -> None:
    argv = [sys.executable, "-m", "banditree_cli", "simulate", "digits", "--server", server.url,
            "--api-key", ADMIN_KEY, "--model", "dgt", "--rounds", "1000", "--seeds", "1", "--baselines", "",
            "--eval-points", "2", "--no-progress", "--keep-models", "--out", str(tmp_path / "run")]  # fmt: skip
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(argv, env=env, cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert admin.get(f"/v1/models/{MODEL}").json()["counters"]["feedback"] == 1000
    page = console().open()
    page.wait_for_selector(f"#models-body tr[data-name={MODEL}]")
    page.click(f"#models-body tr[data-name={MODEL}] a")
    page.wait_for_selector("#loss-chart svg polyline")
    cards = {c.split("\n")[0]: c.split("\n")[1:] for c in page.locator(".card").all_inner_texts()}
    recent, overall = float(cards["Windowed loss"][0]), float(cards["Progressive loss"][0])
    assert recent < overall - 0.1  # the last rows lose much less than the run on average
    assert recent < 0.9  # and less than uniform play on 10 classes with one right answer
    shot(page, "tutorial-learning")
    page.keyboard.press("2")  # the Policy tab
    page.wait_for_selector("svg.tree g.leaf")
    exported = admin.get(f"/v1/models/{MODEL}/tree").json()["model"]
    assert page.locator("svg.tree g.leaf").count() == len(exported["leaves"]) > 1
