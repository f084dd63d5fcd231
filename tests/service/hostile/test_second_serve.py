"""A second ``banditree serve`` on a data directory in use says so in one line and exits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.service.hostile.serve import Served
from tests.service.live_server import ROOT, free_port


def test_a_second_serve_on_the_same_data_dir_prints_one_clear_line(tmp_path: Path) -> None:
    data = tmp_path / "data"
    first = Served({"BANDITREE_DATA_DIR": str(data)}, log_path=tmp_path / "first.log")
    try:
        env = {
            **os.environ, "PYTHONPATH": str(ROOT), "BANDITREE_DATA_DIR": str(data),
            "BANDITREE_PORT": str(free_port()),
        }  # fmt: skip
        second = subprocess.run(
            [sys.executable, "-m", "banditree", "serve"],
            env=env, cwd=ROOT, capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        output = second.stdout + second.stderr
        assert second.returncode == 2, output
        assert "another banditree process serves" in output and str(data) in output
        assert "Traceback" not in output and len(output.strip().splitlines()) == 1, output
        with first.client() as http:
            assert http.get("/readyz").status_code == 200  # the first one is untouched
    finally:
        first.stop()
    # once the first has stopped, the directory is free again
    again = Served({"BANDITREE_DATA_DIR": str(data)}, log_path=tmp_path / "again.log")
    again.stop()
