"""Chaos harness: real service processes killed with SIGKILL while a client keeps going.

:class:`ServiceProcess` is one ``uvicorn`` process that can be killed and restarted
without waiting; :class:`Killer` SIGKILLs a random process every 1-3 s (never the last
ready API process) and restarts it; :func:`send_pairs` sends predict + feedback pairs,
retrying on other processes until every feedback has a definite answer.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Sequence
from pathlib import Path

import httpx

from tests.service.live_server import ROOT, free_port


class ServiceProcess:
    """A service process with ``env``; :meth:`restart` replaces it by a fresh one."""

    def __init__(
        self,
        env: dict[str, str],
        *,
        log_path: Path,
        serves: bool = True,
        host: str = "127.0.0.1",
        prefix: Sequence[str] = (),
    ) -> None:
        """``prefix`` runs the command inside something (``ip netns exec <ns>``), where
        the process listens on ``host``."""
        self.env = {**os.environ, **env, "PYTHONPATH": str(ROOT)}
        self.log_path, self.serves = log_path, serves
        self.host, self.prefix = host, list(prefix)
        self.port = free_port()
        self.url = f"http://{host}:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        self.kills = 0
        self.start()

    def start(self) -> None:
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                [*self.prefix, sys.executable, "-m", "uvicorn", "service.main:create_app_from_env",
                 "--factory", "--host", self.host, "--port", str(self.port), "--log-level",
                 "warning"],
                env=self.env, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        self._ready = False

    def ready(self) -> bool:
        """True once the process answered ``/readyz`` (and has not been killed since)."""
        if self.process is None or self.process.poll() is not None:
            return False
        if not self._ready:
            try:
                self._ready = httpx.get(self.url + "/readyz", timeout=0.5).status_code == 200
            except httpx.TransportError:
                return False
        return self._ready

    def wait_ready(self, timeout_seconds: float = 120.0) -> None:
        deadline = time.monotonic() + timeout_seconds
        while not self.ready():
            assert self.process is not None
            if self.process.poll() is not None:
                raise RuntimeError(f"process exited:\n{self.log_path.read_text()[-3000:]}")
            if time.monotonic() > deadline:
                raise RuntimeError(f"process not ready:\n{self.log_path.read_text()[-3000:]}")
            time.sleep(0.1)

    def kill(self, sig: signal.Signals = signal.SIGKILL) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(sig)
            self.process.wait(timeout=60)
        self._ready = False

    def restart(self) -> None:
        self.kill()
        self.kills += 1
        self.start()


class Killer(threading.Thread):
    """Every 1-3 s, SIGKILL a random ready process and start it again.

    With several API processes one of them stays ready, so the client always has one.
    """

    def __init__(self, processes: Sequence[ServiceProcess], *, seed: int = 0) -> None:
        super().__init__(daemon=True)
        self.processes = list(processes)
        self.random = random.Random(seed)
        self.halt = threading.Event()

    def run(self) -> None:
        while not self.halt.wait(self.random.uniform(1.0, 3.0)):
            ready = [p for p in self.processes if p.ready()]
            ready_apis = [p for p in ready if p.serves]
            several_apis = sum(p.serves for p in self.processes) > 1
            victims = [p for p in ready if not (several_apis and ready_apis == [p])]
            if victims:
                self.random.choice(victims).restart()

    def stop(self) -> None:
        self.halt.set()
        self.join()


def _post(http: httpx.Client, url: str, body: dict[str, object]) -> httpx.Response | None:
    try:
        return http.post(url, json=body, timeout=5.0)
    except httpx.TransportError:
        return None


def send_pairs(
    apis: Sequence[ServiceProcess], model: str, pairs: int, *, deadline_seconds: float
) -> set[str]:
    """Send ``pairs`` predict + feedback pairs; the event ids whose feedback was acknowledged.

    A feedback whose answer was lost (its process died) is sent again, to any API
    process, until it gets 200 or 409 (logged by the lost attempt).
    """
    acknowledged: set[str] = set()
    rng = random.Random(1)
    deadline = time.monotonic() + deadline_seconds
    with httpx.Client() as http:
        while len(acknowledged) < pairs:
            assert time.monotonic() < deadline, f"only {len(acknowledged)} pairs in time"
            api = rng.choice([a for a in apis if a.ready()] or list(apis))
            contexts = [[rng.uniform(-1, 1) for _ in range(3)] for _ in range(10)]
            answer = _post(http, f"{api.url}/v1/models/{model}/predict", {"contexts": contexts})
            if answer is None or answer.status_code != 200:
                time.sleep(0.05)
                continue
            assert "logged" not in answer.json(), answer.text
            for decision, context in zip(answer.json()["decisions"], contexts, strict=True):
                loss = float(decision["action"] != int(context[0] > 0))
                body = {"event_id": decision["event_id"], "loss": loss}
                lost_answer = False
                while True:
                    assert time.monotonic() < deadline, "feedback never acknowledged"
                    api = rng.choice([a for a in apis if a.ready()] or list(apis))
                    reply = _post(http, f"{api.url}/v1/models/{model}/feedback", body)
                    if reply is None or reply.status_code == 503:
                        lost_answer = True
                        time.sleep(0.02)
                        continue
                    if reply.status_code == 409 and lost_answer:
                        break  # an earlier attempt was logged: acknowledged, exactly once
                    assert reply.status_code == 200, reply.text
                    break
                acknowledged.add(decision["event_id"])
    return acknowledged
