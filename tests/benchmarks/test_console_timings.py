"""``benchmarks.console_timings`` in its smallest setting: every goal gets a line."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_every_goal_is_measured_and_printed() -> None:
    pytest.importorskip("playwright.sync_api")
    if shutil.which("chromium") is None:
        pytest.skip("chromium is not installed")
    argv = [
        sys.executable,
        "-m",
        "benchmarks.console_timings",
        "--models",
        "5",
        "--traces",
        "2",
        "--rounds",
        "1",
    ]
    done = subprocess.run(
        argv,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert any(line.startswith("overview  6 rows interactive") for line in lines)
    assert any(line.startswith("forest    5110 SVG nodes drawn") for line in lines)
    assert any(line.startswith("trace     median of 2") for line in lines)
