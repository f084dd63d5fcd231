"""A ``redis-server`` of a test's own: no persistence, on a spare port, killed or frozen."""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
from pathlib import Path

import pytest
import redis

needs_redis_server = pytest.mark.skipif(
    shutil.which("redis-server") is None, reason="needs redis-server"
)


class OwnRedis:
    """``redis-server`` on a spare port; stopped only by this test.

    Without persistence, or with ``snapshot_dir`` the snapshot an explicit ``SAVE``
    writes there (the next start loads it), or with ``aof_dir`` an append-only file there,
    fsynced on every write (a restart then finds everything acknowledged before).
    """

    def __init__(
        self,
        port: int,
        log_path: Path,
        *,
        aof_dir: Path | None = None,
        snapshot_dir: Path | None = None,
    ) -> None:
        self.port = port
        self.log_path = log_path
        self.aof_dir = aof_dir
        self.snapshot_dir = snapshot_dir  # SAVE writes a snapshot there; a start loads it
        self.process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        args = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", ""]
        # a replica's first copy starts at once, not after Redis's 5 s wait for others
        args += ["--repl-diskless-sync-delay", "0"]
        if self.aof_dir is None:
            args += ["--appendonly", "no"]
            if self.snapshot_dir is not None:
                args += ["--dir", str(self.snapshot_dir)]
        else:
            args += ["--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.aof_dir)]
        with self.log_path.open("ab") as log:
            self.process = subprocess.Popen(args, stdout=log, stderr=subprocess.STDOUT)
        client = redis.Redis(port=self.port)
        for _ in range(100):
            try:
                client.ping()
                break
            except redis.ConnectionError:
                time.sleep(0.05)
        client.close()

    def signal(self, sig: signal.Signals) -> None:
        assert self.process is not None
        self.process.send_signal(sig)
        if sig == signal.SIGKILL:
            self.process.wait(timeout=10)
