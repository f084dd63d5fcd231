"""The models overview in a browser: list, sort, filter, create with inline errors, delete."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from tests.console.conftest import APP_KEY, shot
from tests.console.traffic import NAMED, create, feed


def make(admin: httpx.Client, name: str, **extra: Any) -> None:
    body = {
        "kind": "dgt",
        "task": "classification",
        "n_features": 3,
        "n_actions": 2,
        "height": 2,
        **extra,
    }
    response = admin.put(f"/v1/models/{name}", json=body)
    assert response.status_code == 201, response.text


def test_overview_lists_sorts_and_filters(console: Any, admin: httpx.Client) -> None:
    make(admin, "ov-alpha")
    make(admin, "ov-beta", kind="linear")
    page = console().open()
    page.wait_for_selector("#models-body tr[data-name=ov-beta]")
    names = page.locator("#models-body tr").evaluate_all("rows => rows.map(r => r.dataset.name)")
    assert names.index("ov-alpha") < names.index("ov-beta")
    page.click("button[data-sort=name]")  # sorted by name already: now descending
    names = page.locator("#models-body tr").evaluate_all("rows => rows.map(r => r.dataset.name)")
    assert names.index("ov-beta") < names.index("ov-alpha")
    page.keyboard.press("/")
    page.keyboard.type("linear")
    assert page.locator("#models-body tr").count() >= 1
    assert page.locator("#models-body tr[data-name=ov-alpha]").count() == 0
    assert "linear" in page.locator("#models-body tr[data-name=ov-beta]").inner_text()
    page.fill("[data-filter]", "")
    shot(page, "overview")


def test_admin_creates_with_inline_errors_and_deletes(console: Any, admin: httpx.Client) -> None:
    page = console().allow(422).open()
    page.click("#create-button")
    page.fill("#create-form input[name=name]", "ov-created")
    page.fill("#create-form input[name=height]", "40")
    page.click("#create-form button[type=submit]")
    error = page.locator('#create-form [data-error-for="height"]')
    error.wait_for()
    page.wait_for_function(
        "document.querySelector('#create-form [data-error-for=height]').textContent.length > 0"
    )
    assert "12" in error.inner_text()  # the bound the API names
    shot(page, "create-error")
    page.fill("#create-form input[name=height]", "3")
    page.click("#create-form button[type=submit]")
    page.wait_for_selector("#models-body tr[data-name=ov-created]")
    assert admin.get("/v1/models/ov-created").json()["config"]["height"] == 3
    page.once("dialog", lambda d: d.accept())
    page.click("button[data-delete=ov-created]")
    page.click("dialog[open] button[value=yes]")
    page.wait_for_selector("#models-body tr[data-name=ov-created]", state="detached")
    assert admin.get("/v1/models/ov-created").status_code == 404


def test_app_key_sees_no_admin_controls(console: Any, admin: httpx.Client) -> None:
    make(admin, "ov-readonly")
    page = console(APP_KEY).open()
    page.wait_for_selector("#models-body tr[data-name=ov-readonly]")
    assert page.locator("#create-button").count() == 0
    assert page.locator("button[data-delete]").count() == 0
    assert page.locator("#role").inner_text() == "read-only"


def test_theme_toggle_and_keyboard(console: Any) -> None:
    page = console().open()
    assert page.evaluate("document.documentElement.dataset.theme") == "light"
    page.keyboard.press("t")
    assert page.evaluate("document.documentElement.dataset.theme") == "dark"
    assert page.locator("#theme-button").get_attribute("aria-pressed") == "true"
    shot(page, "overview-dark")
    page.keyboard.press("t")
    assert page.evaluate("document.documentElement.dataset.theme") == "light"


def test_rates_and_trend_come_from_the_services_series(console: Any, admin: httpx.Client) -> None:
    create(admin, "ov-busy", NAMED)

    def sampled(ready: Callable[[dict[str, Any]], bool]) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            figures = admin.get("/v1/series").json()["models"].get("ov-busy")
            if figures and ready(figures):
                return
            time.sleep(0.2)
        raise AssertionError("the service sampled no traffic of ov-busy")

    sampled(lambda f: True)  # two samples of the idle model
    feed(admin, "ov-busy", 200)  # answered traffic after them
    sampled(lambda f: f["window_loss"] is not None)
    watched = console()
    lists: list[str] = []
    watched.page.on("request", lambda r: lists.append(r.url) if "/v1/models?" in r.url else None)
    page = watched.open()
    row = page.locator("#models-body tr[data-name=ov-busy]")
    # the first answer already shows rates: nothing waits for a second poll of the list
    page.wait_for_function(
        "() => { const r = document.querySelector('#models-body tr[data-name=ov-busy]');"
        " return r && r.children[5].textContent !== '–'; }"
    )
    assert len(lists) == 1, lists
    cells = row.locator("td").all_inner_texts()
    assert float(cells[5].replace(",", "")) > 0 and float(cells[6].replace(",", "")) > 0
    assert 0 <= float(cells[7]) <= 1  # the loss of the feedback learned in the last minute


def test_the_series_fills_the_rows_drawn_in_place(console: Any, admin: httpx.Client) -> None:
    """The rates and trends set the cells of the rows drawn: redrawing 1,001 rows for
    them took 1.2 s with 1,000 models."""
    make(admin, "ov-kept")
    deadline = time.monotonic() + 30
    while "ov-kept" not in admin.get("/v1/series").json()["models"]:
        assert time.monotonic() < deadline, "the service sampled no series of ov-kept"
        time.sleep(0.2)
    watched = console()
    series: list[Any] = []
    lists: list[Any] = []

    def later_lists(route: Any) -> None:  # the first list passes; later polls wait
        lists.append(route)
        if len(lists) == 1:
            route.continue_()

    watched.page.route("**/v1/series", lambda route: series.append(route))
    watched.page.route("**/v1/models?*", later_lists)
    page = watched.open()
    page.wait_for_selector("#models-body tr[data-name=ov-kept]")
    page.evaluate("window.kept = document.querySelector('#models-body tr[data-name=ov-kept]')")
    assert page.evaluate("window.kept.children[5].textContent") == "–"
    series[0].continue_()
    page.wait_for_function("() => window.kept.children[5].textContent !== '–'")
    # the same row, still drawn, now with the rate of the service's series
    assert page.evaluate(
        "document.querySelector('#models-body tr[data-name=ov-kept]') === window.kept"
    )
    assert page.evaluate("window.kept.children[5].textContent") == "0"
    page.unroute("**/v1/series")
    page.unroute("**/v1/models?*")
    for route in series[1:] + lists[1:]:
        route.continue_()
