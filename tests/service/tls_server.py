"""A live server over TLS (a self-signed certificate for 127.0.0.1, made with ``openssl``),
for clients that refuse to send a key over plain HTTP (Microsoft's REST clients)."""

from __future__ import annotations

import shutil
import signal
import ssl
import subprocess
import time
from pathlib import Path

import httpx

from tests.service.live_server import LiveServer


def self_signed(directory: Path) -> tuple[Path, Path]:
    """``(certificate, key)`` of a one-day certificate for ``127.0.0.1``."""
    if shutil.which("openssl") is None:
        raise RuntimeError("openssl is needed to make a test certificate")
    cert, key = directory / "cert.pem", directory / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
         "-keyout", str(key), "-out", str(cert), "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1"],
        check=True, capture_output=True,
    )  # fmt: skip
    return cert, key


class TlsLiveServer(LiveServer):
    """:class:`LiveServer` serving HTTPS with ``cert`` and ``key``; ``url`` is ``https://``."""

    def __init__(self, env: dict[str, str], *, log_path: Path, cert: Path, key: Path) -> None:
        self.cert, self.key = cert, key
        super().__init__(env, log_path=log_path)

    def trust(self) -> ssl.SSLContext:
        """A client TLS context that trusts this server's certificate."""
        return ssl.create_default_context(cafile=str(self.cert))

    def _argv(self) -> list[str]:
        return [*super()._argv(), "--ssl-certfile", str(self.cert), "--ssl-keyfile", str(self.key)]

    def _wait_ready(self, timeout_seconds: float = 60.0) -> None:
        self.url = f"https://127.0.0.1:{self.port}"
        deadline = time.monotonic() + timeout_seconds
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited early:\n{self.log_path.read_text()}")
            try:
                ready = httpx.get(self.url + "/readyz", timeout=1.0, verify=self.trust())
                if ready.status_code == 200:
                    return
            except httpx.TransportError:
                pass
            time.sleep(0.1)
        self.stop(signal.SIGKILL)
        raise RuntimeError(f"server not ready:\n{self.log_path.read_text()}")
