"""Locations of the shipped deployment files and readers for the Grafana dashboards.

The dashboard readers flatten rows, pull out every PromQL query and template variable,
and resolve Grafana's ``$variables`` the way Grafana would before sending a query.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

DOCKER_DIR = Path(__file__).resolve().parents[2] / "docker"
PROMETHEUS_CONFIG = DOCKER_DIR / "prometheus" / "prometheus.yml"
ALERT_RULES = DOCKER_DIR / "prometheus" / "alerts.yml"
ALERT_RULE_TESTS = DOCKER_DIR / "prometheus" / "alerts_test.yml"
COMPOSE_FILE = DOCKER_DIR / "compose.yaml"
DASHBOARD_DIR = DOCKER_DIR / "grafana" / "dashboards"
PROVISIONING_DIR = DOCKER_DIR / "grafana" / "provisioning"

# Grafana's built-in interval variables, replaced by fixed windows that span a short test run.
GRAFANA_INTERVALS = {"__rate_interval": "1m", "__interval": "5s", "__range": "5m"}
_VARIABLE = re.compile(r"\$\{(\w+)\}|\$(\w+)")
_LABEL_VALUES = re.compile(
    r"^label_values\(\s*(?:(?P<metric>[^,()]+?)\s*,\s*)?(?P<label>\w+)\s*\)$"
)
METRIC_NAME = re.compile(r"\bbanditree_[a-z0-9_]+\b")


@dataclass(frozen=True)
class PanelQuery:
    """One PromQL query of one dashboard panel."""

    dashboard: str
    panel: str
    ref_id: str
    expr: str

    @property
    def label(self) -> str:
        """``dashboard / panel [refId]``, for failure messages."""
        return f"{self.dashboard} / {self.panel} [{self.ref_id}]"


@dataclass(frozen=True)
class TemplateVariable:
    """A ``label_values(metric, label)`` query variable of a dashboard."""

    name: str
    metric: str | None
    label: str
    all_value: str | None


def load_dashboards() -> dict[str, dict[str, Any]]:
    """Every shipped dashboard, by file name."""
    return {
        path.name: json.loads(path.read_text()) for path in sorted(DASHBOARD_DIR.glob("*.json"))
    }


def iter_panels(dashboard: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """The dashboard's panels that draw data, including those inside collapsed rows."""
    for panel in dashboard.get("panels", []):
        if panel.get("type") == "row":
            yield from panel.get("panels", [])
        else:
            yield panel


def panel_queries(name: str, dashboard: dict[str, Any]) -> list[PanelQuery]:
    """All PromQL queries of a dashboard's panels (hidden targets excluded)."""
    return [
        PanelQuery(name, panel["title"], target.get("refId", "?"), target["expr"])
        for panel in iter_panels(dashboard)
        for target in panel.get("targets", [])
        if not target.get("hide", False) and target.get("expr")
    ]


def template_variables(dashboard: dict[str, Any]) -> list[TemplateVariable]:
    """The dashboard's query variables; anything but ``label_values(...)`` is an error."""
    variables = []
    for variable in dashboard.get("templating", {}).get("list", []):
        query = variable.get("query")
        text = query.get("query", "") if isinstance(query, dict) else str(query)
        match = _LABEL_VALUES.match(text.strip())
        if variable.get("type") != "query" or match is None:
            raise ValueError(f"variable {variable.get('name')!r}: unsupported query {text!r}")
        variables.append(
            TemplateVariable(
                name=variable["name"],
                metric=match["metric"],
                label=match["label"],
                all_value=variable.get("allValue") if variable.get("includeAll") else None,
            )
        )
    return variables


def resolve(expr: str, values: dict[str, str]) -> str:
    """Replace ``$name`` / ``${name}`` by ``values`` or Grafana's interval defaults.

    Raises ``KeyError`` naming a variable that neither defines.
    """
    known = {**GRAFANA_INTERVALS, **values}

    def substitute(match: re.Match[str]) -> str:
        name = match[1] or match[2]
        if name not in known:
            raise KeyError(f"undefined dashboard variable ${name} in {expr!r}")
        return known[name]

    return _VARIABLE.sub(substitute, expr)


def alert_rules() -> list[dict[str, Any]]:
    """Every alerting rule of the shipped rule file."""
    groups = yaml.safe_load(ALERT_RULES.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def metric_names(expr: str) -> set[str]:
    """The ``banditree_*`` series names a query reads."""
    return set(METRIC_NAME.findall(expr))
