"""``banditree serve`` as a subprocess (the real protocol, limits and timeouts), for tests."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx

from tests.service.live_server import ROOT, free_port


class Served:
    """``python -m banditree serve`` on a free port with ``BANDITREE_*`` env."""

    def __init__(self, env: dict[str, str], *, log_path: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = log_path
        full_env = {
            **os.environ, "PYTHONPATH": str(ROOT), "BANDITREE_PORT": str(self.port),
            "BANDITREE_LOG_LEVEL": "warning", **env,
        }  # fmt: skip
        self._log = open(log_path, "ab")  # closed in stop()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "banditree", "serve"],
            env=full_env, cwd=ROOT, stdout=self._log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"banditree serve exited early:\n{log_path.read_text()}")
            try:
                if httpx.get(self.url + "/readyz", timeout=1.0).status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"banditree serve not ready:\n{log_path.read_text()}")

    def client(self, key: str | None = None) -> httpx.Client:
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        return httpx.Client(base_url=self.url, headers=headers, timeout=30.0)

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGKILL)
        self.process.wait(timeout=30)
        self._log.close()
