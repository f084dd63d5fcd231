"""The shipped Prometheus configuration and alerting rules pass ``promtool``."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.deploy.shipped_files import ALERT_RULE_TESTS, ALERT_RULES, PROMETHEUS_CONFIG, alert_rules

PROMTOOL = shutil.which("promtool")
needs_promtool = pytest.mark.skipif(
    PROMTOOL is None,
    reason="promtool not installed (Debian package 'prometheus'; .ci/run installs it)",
)


def _promtool(*args: str) -> subprocess.CompletedProcess[str]:
    assert PROMTOOL is not None
    return subprocess.run(
        [PROMTOOL, *args], capture_output=True, text=True, timeout=60, cwd=ALERT_RULES.parent
    )


@needs_promtool
def test_promtool_check_config_accepts_config_and_its_rule_files(tmp_path: Path) -> None:
    """The shipped config, with its metrics-key secret (mounted by compose at
    ``/run/secrets/metrics_key``) pointed at a file of the test's own: promtool checks
    that the credentials file exists."""
    text = PROMETHEUS_CONFIG.read_text()
    assert "credentials_file: /run/secrets/metrics_key" in text
    secret = tmp_path / "metrics_key"
    secret.write_text("a-metrics-key\n")
    config = ALERT_RULES.parent / f".promtool-check-{os.getpid()}.yml"
    config.write_text(text.replace("/run/secrets/metrics_key", str(secret)))
    try:
        result = _promtool("check", "config", str(config))
    finally:
        config.unlink()
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 rule files found" in result.stdout


@needs_promtool
def test_promtool_check_rules_accepts_alerts() -> None:
    result = _promtool("check", "rules", str(ALERT_RULES))
    assert result.returncode == 0, result.stdout + result.stderr
    assert f"{len(alert_rules())} rules found" in result.stdout


@needs_promtool
def test_alert_rule_unit_tests_pass() -> None:
    """alerts_test.yml feeds synthetic series and expects each alert to fire or stay quiet."""
    result = _promtool("test", "rules", ALERT_RULE_TESTS.name)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_alert_rule_unit_tests_cover_every_alert() -> None:
    tested = {
        case["alertname"]
        for test in yaml.safe_load(ALERT_RULE_TESTS.read_text())["tests"]
        for case in test.get("alert_rule_test", [])
    }
    assert {rule["alert"] for rule in alert_rules()} <= tested


def test_alerts_cover_what_an_operator_must_know() -> None:
    """Down, checkpoints failing/stale, unmatched feedback, rising loss, predict p99."""
    exprs = {rule["alert"]: rule["expr"] for rule in alert_rules()}
    wanted = {
        'up{job="banditree"}': "service down",
        "banditree_checkpoint_failures_total": "checkpoints failing",
        "banditree_checkpoint_age_seconds": "checkpoints stale",
        'outcome=~"unknown|expired"': "feedback mostly unknown/expired",
        "banditree_progressive_mean_loss": "progressive loss rising",
        "histogram_quantile(0.99, sum by (model, le) (rate(banditree_predict_latency_seconds_bucket": "predict p99",
    }
    for fragment, concern in wanted.items():
        assert any(fragment in expr for expr in exprs.values()), f"no alert for {concern}"
    for rule in alert_rules():
        assert rule["labels"]["severity"] in {"critical", "warning"}, rule["alert"]
        assert rule["annotations"]["summary"], rule["alert"]
