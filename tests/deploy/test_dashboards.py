"""Static checks of the shipped Grafana dashboards and their provisioning."""

from __future__ import annotations

import yaml

from tests.deploy.shipped_files import (
    PROVISIONING_DIR,
    iter_panels,
    load_dashboards,
    metric_names,
    panel_queries,
    resolve,
    template_variables,
)

# Metrics the service exports without a ``model`` label; every other panel is per model.
_SERVICE_WIDE = ("banditree_http_", "banditree_models_loaded")


def _provisioned_datasource_uids() -> set[str]:
    uids = set()
    for path in (PROVISIONING_DIR / "datasources").glob("*.yaml"):
        for source in yaml.safe_load(path.read_text())["datasources"]:
            uids.add(source["uid"])
    return uids


def test_dashboards_exist_and_have_unique_uids() -> None:
    dashboards = load_dashboards()
    assert dashboards, "no dashboard JSON under docker/grafana/dashboards"
    uids = [dashboard["uid"] for dashboard in dashboards.values()]
    assert len(uids) == len(set(uids))


def test_every_panel_queries_the_provisioned_prometheus() -> None:
    uids = _provisioned_datasource_uids()
    for name, dashboard in load_dashboards().items():
        for panel in iter_panels(dashboard):
            assert panel.get("targets"), f"{name} / {panel['title']}: no query"
            assert panel["datasource"]["uid"] in uids, f"{name} / {panel['title']}"
            for target in panel["targets"]:
                assert target["datasource"]["uid"] in uids, f"{name} / {panel['title']}"
                assert target["expr"].strip(), f"{name} / {panel['title']}: empty query"


def test_panels_have_unique_ids_and_do_not_overlap() -> None:
    for name, dashboard in load_dashboards().items():
        ids = [panel["id"] for panel in dashboard["panels"]]
        assert len(ids) == len(set(ids)), name
        cells: set[tuple[int, int]] = set()
        for panel in dashboard["panels"]:
            grid = panel["gridPos"]
            assert 0 <= grid["x"] and grid["x"] + grid["w"] <= 24, f"{name} / {panel['title']}"
            covered = {
                (row, column)
                for row in range(grid["y"], grid["y"] + grid["h"])
                for column in range(grid["x"], grid["x"] + grid["w"])
            }
            assert not covered & cells, f"{name} / {panel['title']} overlaps another panel"
            cells |= covered


def test_model_variable_lists_models_from_a_service_metric() -> None:
    for name, dashboard in load_dashboards().items():
        variables = {variable.name: variable for variable in template_variables(dashboard)}
        assert "model" in variables, f"{name}: no 'model' template variable"
        model = variables["model"]
        assert model.label == "model" and model.metric is not None
        assert model.metric.startswith("banditree_")


def test_per_model_panels_filter_by_the_model_variable() -> None:
    for name, dashboard in load_dashboards().items():
        for query in panel_queries(name, dashboard):
            names = metric_names(query.expr)
            if names and not all(metric.startswith(_SERVICE_WIDE) for metric in names):
                for metric in names:
                    assert f'{metric}{{model=~"$model"' in query.expr, query.label


def test_every_query_resolves_all_its_variables() -> None:
    for name, dashboard in load_dashboards().items():
        values = {variable.name: ".*" for variable in template_variables(dashboard)}
        for query in panel_queries(name, dashboard):
            assert "$" not in resolve(query.expr, values), query.label


def test_dashboard_provider_is_provisioned() -> None:
    providers = []
    for path in (PROVISIONING_DIR / "dashboards").glob("*.yaml"):
        providers += yaml.safe_load(path.read_text())["providers"]
    assert [provider["type"] for provider in providers] == ["file"]
