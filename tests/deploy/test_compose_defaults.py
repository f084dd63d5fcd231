"""The compose stack is safe by default: localhost ports, keys required, no default password."""

from __future__ import annotations

import re
from typing import Any

import yaml

from tests.deploy.shipped_files import COMPOSE_FILE, PROMETHEUS_CONFIG

_REQUIRED = re.compile(r"^\$\{(?P<name>[A-Z_]+):\?[^}]+\}$")


def _compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE_FILE.read_text())


def test_every_published_port_is_bound_to_localhost_unless_configured() -> None:
    for name, service in _compose()["services"].items():
        for port in service.get("ports", []):
            assert port.startswith("${BANDITREE_PUBLISH_ADDRESS:-127.0.0.1}:"), f"{name}: {port}"


def test_keys_and_the_grafana_password_are_required() -> None:
    services = _compose()["services"]
    env = services["banditree"]["environment"]
    for variable in ("BANDITREE_API_KEYS", "BANDITREE_ADMIN_KEYS", "BANDITREE_METRICS_KEY"):
        match = _REQUIRED.match(env[variable])
        assert match and match["name"] == variable, env[variable]
    password = services["grafana"]["environment"]["GF_SECURITY_ADMIN_PASSWORD"]
    assert _REQUIRED.match(password) and "admin}" not in password


def test_prometheus_scrapes_with_the_metrics_key_secret() -> None:
    compose = _compose()
    assert compose["secrets"]["metrics_key"] == {"environment": "BANDITREE_METRICS_KEY"}
    assert "metrics_key" in compose["services"]["prometheus"]["secrets"]
    config = yaml.safe_load(PROMETHEUS_CONFIG.read_text())
    job = next(job for job in config["scrape_configs"] if job["job_name"] == "banditree")
    assert job["authorization"] == {
        "type": "Bearer",
        "credentials_file": "/run/secrets/metrics_key",
    }
