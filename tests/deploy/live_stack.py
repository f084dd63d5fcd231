"""A real ``banditree serve`` and a real Prometheus on loopback, for the deployment tests.

Both run as subprocesses with their logs in a temporary directory; Prometheus uses the
shipped configuration and alert rules, re-targeted at the loopback service and with a
one-second scrape and evaluation interval.
"""

from __future__ import annotations

import contextlib
import math
import os
import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import yaml
from prometheus_client.parser import text_string_to_metric_families

from tests.deploy.shipped_files import ALERT_RULES, PROMETHEUS_CONFIG

REPO_ROOT = Path(__file__).resolve().parents[2]
PROMETHEUS_BINARY = shutil.which("prometheus")
SCRAPE_INTERVAL = "1s"


def free_loopback_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _log_tail(path: Path, n_chars: int = 3000) -> str:
    return path.read_text(errors="replace")[-n_chars:] if path.exists() else "(no log)"


def _wait_until_answers(
    url: str, process: subprocess.Popen[bytes], log: Path, timeout_seconds: float
) -> None:
    deadline = time.monotonic() + timeout_seconds
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{url}: process exited {process.returncode}\n{_log_tail(log)}")
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url, timeout=1.0).status_code == 200:
                return
        time.sleep(0.2)
    raise RuntimeError(f"{url} did not answer within {timeout_seconds} s\n{_log_tail(log)}")


@contextlib.contextmanager
def _subprocess(
    args: list[str], log: Path, env: dict[str, str] | None = None
) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as log_file:
        process = subprocess.Popen(
            args, stdout=log_file, stderr=subprocess.STDOUT, env=env, cwd=REPO_ROOT
        )
        try:
            yield process
        finally:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(timeout=15)


@contextlib.contextmanager
def running_service(work_dir: Path) -> Iterator[str]:
    """``banditree serve`` on a free loopback port with the embedded store; yields its URL."""
    port = free_loopback_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("BANDITREE_")}
    env |= {"BANDITREE_DATA_DIR": str(work_dir / "service-data"), "BANDITREE_LOG_LEVEL": "warning"}
    env["BANDITREE_SWEEP_INTERVAL_SECONDS"] = "0.2"
    args = [sys.executable, "-m", "banditree_cli", "serve", "--host", "127.0.0.1"]
    args += ["--port", str(port)]
    log = work_dir / "service.log"
    with _subprocess(args, log, env) as process:
        url = f"http://127.0.0.1:{port}"
        _wait_until_answers(f"{url}/readyz", process, log, timeout_seconds=60)
        yield url


def loopback_prometheus_config(service_address: str, prometheus_address: str) -> dict[str, Any]:
    """The shipped config with loopback targets, absolute rule paths, 1 s intervals."""
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    config["global"]["scrape_interval"] = SCRAPE_INTERVAL
    config["global"]["evaluation_interval"] = SCRAPE_INTERVAL
    config["rule_files"] = [str(PROMETHEUS_CONFIG.parent / name) for name in config["rule_files"]]
    targets = {"banditree": service_address, "prometheus": prometheus_address}
    for job in config["scrape_configs"]:
        job["scrape_interval"] = SCRAPE_INTERVAL
        job["static_configs"] = [{"targets": [targets[job["job_name"]]]}]
        job.pop("authorization", None)  # the compose secret; the live service has no metrics key
    assert str(ALERT_RULES) in config["rule_files"]
    return config


@contextlib.contextmanager
def running_prometheus(work_dir: Path, service_url: str) -> Iterator[str]:
    """The Debian ``prometheus`` binary scraping ``service_url``; yields its URL."""
    if PROMETHEUS_BINARY is None:
        raise RuntimeError("the prometheus binary is not installed")
    port = free_loopback_port()
    address = f"127.0.0.1:{port}"
    config_path = work_dir / "prometheus.yml"
    config = loopback_prometheus_config(service_url.removeprefix("http://"), address)
    config_path.write_text(yaml.safe_dump(config))
    args = [
        PROMETHEUS_BINARY,
        f"--config.file={config_path}",
        f"--storage.tsdb.path={work_dir / 'prometheus-data'}",
        f"--web.listen-address={address}",
        "--log.level=warn",
    ]
    log = work_dir / "prometheus.log"
    with _subprocess(args, log) as process:
        url = f"http://{address}"
        _wait_until_answers(f"{url}/-/ready", process, log, timeout_seconds=30)
        yield url


class PrometheusAPI:
    """The few calls of Prometheus's HTTP API the tests need."""

    def __init__(self, url: str) -> None:
        self.url = url

    def _get(self, path: str, params: dict[str, Any]) -> dict[str, Any]:
        response = httpx.get(f"{self.url}{path}", params=params, timeout=10.0)
        body: dict[str, Any] = response.json()
        if body.get("status") != "success":
            raise ValueError(f"{path} {params}: {body.get('errorType')}: {body.get('error')}")
        return body

    def query(self, promql: str) -> list[dict[str, Any]]:
        """Instant query now; the result series (``metric``, ``value``)."""
        data = self._get("/api/v1/query", {"query": promql})["data"]
        if data["resultType"] != "vector":
            raise ValueError(f"{promql!r}: result type {data['resultType']}, not vector")
        result: list[dict[str, Any]] = data["result"]
        return result

    def label_values(self, label: str, match: str | None) -> list[str]:
        params = {"match[]": match} if match else {}
        values: list[str] = self._get(f"/api/v1/label/{label}/values", params)["data"]
        return values

    def rules(self) -> list[dict[str, Any]]:
        groups = self._get("/api/v1/rules", {})["data"]["groups"]
        return [rule for group in groups for rule in group["rules"]]

    def wait_for_scrape_of(self, service_url: str, metric: str, timeout_seconds: float) -> None:
        """Wait until Prometheus's sum of ``metric`` equals the service's current sum."""
        want = sum_of_exported(service_url, metric)
        deadline = time.monotonic() + timeout_seconds
        while time.monotonic() < deadline:
            result = self.query(f"sum({metric})")
            if result and math.isclose(float(result[0]["value"][1]), want):
                return
            time.sleep(0.25)
        raise TimeoutError(f"Prometheus did not scrape {metric} = {want} in {timeout_seconds} s")


def sum_of_exported(service_url: str, metric: str) -> float:
    """Sum over labels of one sample name in the service's ``/metrics`` text."""
    text = httpx.get(f"{service_url}/metrics", timeout=10.0).text
    return sum(
        sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
        if sample.name == metric
    )
