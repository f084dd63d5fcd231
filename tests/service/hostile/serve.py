"""``banditree serve`` as a subprocess (the real protocol, limits and timeouts), for tests."""

from __future__ import annotations

import os
import signal
import sys

from tests.service.live_server import ROOT, LiveServer


class Served(LiveServer):
    """``python -m banditree serve`` on a free port with ``BANDITREE_*`` env."""

    def _argv(self) -> list[str]:
        return [sys.executable, "-m", "banditree", "serve"]

    def _env(self, env: dict[str, str]) -> dict[str, str]:
        return {
            **os.environ, "PYTHONPATH": str(ROOT), "BANDITREE_PORT": str(self.port),
            "BANDITREE_LOG_LEVEL": "warning", **env,
        }  # fmt: skip

    def stop(self, sig: signal.Signals = signal.SIGKILL) -> int:
        return super().stop(sig)
