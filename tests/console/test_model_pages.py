"""A model's pages in a browser: Learning, Policy, Trace, Features, Decisions, Settings."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.console.conftest import ADMIN_KEY, APP_KEY, ROOT, shot
from tests.console.traffic import NAMED, create, feed
from tests.service.live_server import LiveServer

MODEL = "pages-named"


@pytest.fixture(scope="module")
def trained(server: LiveServer) -> Iterator[str]:
    with server.client(ADMIN_KEY) as client:
        create(client, MODEL, NAMED)
        feed(client, MODEL, 600)
        yield MODEL


def open_tab(console: Any, tab: str, key: str = ADMIN_KEY, allow: int | None = None) -> Any:
    watched = console(key)
    if allow is not None:
        watched.allow(allow)
    page = watched.open(f"#/models/{MODEL}/{tab}")
    page.wait_for_selector(f'.tabs a[aria-current=page][href$="/{tab}"]')
    return page


def test_learning_shows_loss_against_the_baselines(
    console: Any, trained: str, admin: httpx.Client
) -> None:
    page = open_tab(console, "learning")
    page.wait_for_selector("#loss-chart svg polyline")
    cards = page.locator(".card").all_inner_texts()
    assert any(c.startswith("Progressive loss") for c in cards)
    progressive = admin.get(f"/v1/models/{MODEL}").json()["counters"]["progressive_mean_loss"]
    shown = next(c for c in cards if c.startswith("Progressive loss")).split("\n")[1]
    assert float(shown) == pytest.approx(progressive, rel=1e-2)
    legend = page.locator("#loss-chart .legend").inner_text()
    assert "uniform play (SNIPS)" in legend and "best constant" in legend
    shot(page, "learning")


def test_learning_marks_each_drift_signal_at_its_row(console: Any, admin: httpx.Client) -> None:
    name = "pages-drifting"
    create(admin, name, {"kind": "dgt", "n_features": 2, "n_actions": 2, "height": 2})
    for loss in [0.0] * 300 + [1.0] * 100:  # right for 300 rounds, then always wrong
        decision = admin.post(f"/v1/models/{name}/predict", json={"context": [0.1, 0.2]}).json()
        body = {"event_id": decision["event_id"], "loss": loss}
        assert admin.post(f"/v1/models/{name}/feedback", json=body).status_code == 200
    for _ in range(300):
        drift = admin.get(f"/v1/models/{name}/drift").json()
        if drift["signals"]:
            break
        time.sleep(0.1)
    (event,) = drift["events"]
    page = console().open(f"#/models/{name}/learning")
    page.wait_for_selector("#loss-chart svg polyline")
    marks = page.locator("#loss-chart line.drift")
    assert marks.count() == 1 and page.locator("#explore-chart line.drift").count() == 1
    title = marks.first.locator("title").text_content() or ""
    assert title.startswith("drift signal 1 ") and f"at feedback {event['feedback']}," in title
    # drawn at the offset of the row whose feedback set it off, between the axis' ends
    rows = admin.get(f"/v1/models/{name}/log").text.splitlines()
    offsets = [json.loads(r)["offset"] for r in rows]
    (at,) = [json.loads(r)["offset"] for r in rows if event["event_id"] in r]
    x = float(marks.first.get_attribute("x1"))
    share = (at - offsets[0]) / (offsets[-1] - offsets[0])
    box = page.locator("#loss-chart line.axis").first
    left, right = float(box.get_attribute("x1")), float(box.get_attribute("x2"))
    assert x == pytest.approx(left + share * (right - left), abs=1.0)
    assert "Drift signals: 1 in all; 1 marked" in page.locator("#drift-note").inner_text()
    shot(page, "learning-drift")


def test_policy_draws_named_splits_and_a_leafs_decisions(
    console: Any, trained: str, admin: httpx.Client
) -> None:
    page = open_tab(console, "policy")
    page.wait_for_selector("svg.tree g.leaf")
    assert (
        page.locator("svg.tree g.node").count() == 7
        and page.locator("svg.tree g.leaf").count() == 8
    )
    text = page.locator("svg.tree").text_content() or ""
    assert "age" in text or "city" in text  # splits written on the caller's feature names
    stats = admin.get(f"/v1/models/{MODEL}/leaves").json()["leaf_stats"]["trees"][0]["leaves"]
    busiest = max(stats, key=lambda leaf: leaf["decisions"])
    page.locator(f'svg.tree g.leaf[data-leaf="{busiest["leaf"]}"]').click()
    page.wait_for_selector("#leaf-values tbody tr")
    assert page.locator("#leaf-values tbody tr").count() == 3
    assert f"{busiest['decisions']} decisions" in page.locator("#leaf-detail").inner_text()
    page.wait_for_selector("#leaf-decisions table tbody tr")
    assert page.locator("#leaf-decisions tbody tr").count() >= 1
    shot(page, "policy")
    # keyboard: focus another leaf and press Enter
    other = next(leaf for leaf in stats if leaf["leaf"] != busiest["leaf"])
    page.locator(f'svg.tree g.leaf[data-leaf="{other["leaf"]}"]').focus()
    page.keyboard.press("Enter")
    page.wait_for_function(
        f"document.querySelector('#leaf-detail h2').textContent === 'Leaf {other['leaf']}'"
    )


def test_trace_highlights_the_path_and_gives_predicts_answer(
    console: Any, trained: str, admin: httpx.Client
) -> None:
    page = open_tab(console, "trace", allow=422)
    context = {"age": 25.0, "city": "lima"}
    page.fill("#trace-input", json.dumps(context))
    page.click("#trace-form button[type=submit]")
    page.wait_for_selector("#trace-probabilities tbody tr")
    expected = admin.post(f"/v1/models/{MODEL}/trace", json={"contexts": [context]}).json()[
        "traces"
    ][0]
    assert page.locator("svg.tree g.on").count() == 4  # root to leaf of a height-3 tree
    assert page.locator("#trace-greedy strong").inner_text() == str(
        expected["decision"]["greedy_action"]
    )
    assert page.locator("#trace-explanation li").count() == 3
    shot(page, "trace")
    page.fill("#trace-input", "{not json")
    page.click("#trace-form button[type=submit]")
    assert "not JSON" in page.locator('#trace-form [data-error-for="context"]').inner_text()
    page.fill("#trace-input", "[1, 2]")  # a list for a model with named features: the API's 4xx
    page.click("#trace-form button[type=submit]")
    page.wait_for_function(
        "[...document.querySelectorAll('#trace-form .error-text')].some(e => e.textContent.includes('named features'))"
    )


def test_features_weigh_each_named_feature(console: Any, trained: str) -> None:
    page = open_tab(console, "features")
    page.wait_for_selector("#features-table tbody tr")
    rows = page.locator("#features-table tbody tr").all_inner_texts()
    assert {r.split("\t")[0] for r in rows} == {"age", "city"}
    shares = [float(r.split("\t")[2].rstrip("%")) for r in rows]
    assert sum(shares) == pytest.approx(100, abs=0.5)
    assert shares == sorted(shares, reverse=True)
    city = next(r for r in rows if r.startswith("city")).split("\t")
    assert city[4] == "3"  # paris, oslo, lima
    shot(page, "features")


def test_decisions_filter_and_export(console: Any, trained: str) -> None:
    page = open_tab(console, "decisions")
    page.wait_for_selector("#decisions-table tbody tr")
    before = page.locator("#decisions-table tbody tr").count()
    page.fill("#decisions-filter", "oslo")
    rows = page.locator("#decisions-table tbody tr").all_inner_texts()
    assert 0 < len(rows) < before and all("oslo" in r for r in rows)
    page.fill("#decisions-action", "1")
    assert all(
        r.split("\t")[3] == "1" for r in page.locator("#decisions-table tbody tr").all_inner_texts()
    )
    shot(page, "decisions")
    with page.expect_download() as info:
        page.click("#decisions-export")
    lines = info.value.path().read_text().splitlines()
    # time to feedback: from the decision's time (its event id's first 12 hex digits, in
    # milliseconds) to the feedback's
    first = json.loads(lines[0])
    waited = first["time_seconds"] - int(first["event_id"][:12], 16) / 1000
    shown = page.locator("#decisions-table tbody tr").first.locator("td").nth(6).inner_text()
    assert 0 <= waited < 120  # the traffic answers each decision at once
    assert shown == (f"{round(waited * 1000)} ms" if waited < 1 else f"{waited:.3g} s")
    assert lines and all(json.loads(line)["action"] == 1 and "oslo" in line for line in lines)


def test_settings_checkpoint_rollback_and_validate_a_copy(console: Any, trained: str) -> None:
    page = open_tab(console, "settings", allow=422)
    page.wait_for_selector("#config-table")
    assert page.locator("#mode input[value=online]").is_checked()
    assert page.locator("#mode input[value=apprentice]").is_disabled()  # created online
    # An earlier test may have left checkpoints, so a table can be there already: mark
    # it, and wait for the re-rendered one, or the click below could land on a row that
    # the re-render then replaces.
    page.wait_for_selector("#checkpoint-now")  # the first rendering is in
    page.evaluate("document.getElementById('checkpoints-table')?.setAttribute('data-stale', '')")
    page.click("#checkpoint-now")
    page.wait_for_function(
        "document.getElementById('toast').textContent.includes('Checkpoint written')"
    )
    page.wait_for_selector("#checkpoints-table:not([data-stale]) button[data-rollback]")
    version = page.locator("#checkpoints-table button[data-rollback]").first.get_attribute(
        "data-rollback"
    )
    page.locator("#checkpoints-table button[data-rollback]").first.click()
    page.wait_for_function(
        f"document.getElementById('toast').textContent.includes('version {version}')"
    )
    page.fill("#copy-form textarea[name=changes]", '{"height": 40}')
    page.click("#copy-form button[type=submit]")
    page.wait_for_function("document.getElementById('copy-error').textContent.includes('12')")
    assert "height" in page.locator("#copy-error").inner_text()
    shot(page, "settings")


def test_settings_switch_an_apprentice_models_mode(
    console: Any, server: LiveServer, admin: httpx.Client
) -> None:
    create(
        admin,
        "pages-apprentice",
        {"kind": "dgt", "n_features": 3, "n_actions": 2, "mode": "apprentice"},
    )
    page = console().open("#/models/pages-apprentice/settings")
    page.wait_for_selector("#mode input[value=apprentice]:checked")
    page.check("#mode input[value=online]")
    page.wait_for_function("document.getElementById('toast').textContent.includes('online')")
    assert admin.get("/v1/models/pages-apprentice").json()["mode"] == "online"
    page.check("#mode input[value=apprentice]")
    page.wait_for_function("document.getElementById('toast').textContent.includes('apprentice')")
    assert admin.get("/v1/models/pages-apprentice").json()["mode"] == "apprentice"


def test_app_key_reads_but_cannot_change(console: Any, trained: str) -> None:
    page = open_tab(console, "settings", key=APP_KEY)
    page.wait_for_selector("#checkpoints")
    assert page.locator("#mode input[value=online]").is_disabled()
    assert page.locator("#checkpoint-now").count() == 0
    assert page.locator("#copy-form button[type=submit]").is_disabled()


def test_evaluate_prepares_a_run_that_runs(console: Any, trained: str, tmp_path: Path) -> None:
    page = open_tab(console, "evaluate")
    page.fill(
        "#evaluate-candidates",
        '[{"height": 2}, {"explorer": "epsilon_greedy", "explorer_parameter": 0.1}]',
    )
    page.click("#evaluate-prepare")
    commands = page.locator("#evaluate-commands").inner_text()
    assert commands.count("--config") == 2 and f"banditree log export {MODEL}" in commands
    files = []
    with page.expect_download() as log_download:
        page.click("#evaluate-log")
    log_path = tmp_path / f"{MODEL}-log.ndjson"
    log_download.value.save_as(log_path)
    for i in range(2):  # each candidate's file
        with page.expect_download() as info:
            page.click(f"button[data-file='{i}']")
        files.append(tmp_path / info.value.suggested_filename)
        info.value.save_as(files[-1])
    assert json.loads(files[0].read_text())["height"] == 2
    argv = [sys.executable, "-m", "banditree_cli", "evaluate", str(log_path), "--config", str(files[0]),
            "--config", str(files[1]), "--n-bootstrap", "50", "--no-progress", "--out", str(tmp_path / "run")]  # fmt: skip
    done = subprocess.run(
        argv,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report = json.loads((tmp_path / "run" / "report.json").read_text())
    assert len(report["candidates"]) == 2


def test_evaluate_runs_on_the_server_with_progress_and_creates_a_candidate(
    console: Any, trained: str, admin: httpx.Client
) -> None:
    page = open_tab(console, "evaluate", allow=422)
    page.fill("#evaluate-candidates", '[{"height": 0}]')
    page.fill("#evaluate-bootstrap", "50")
    page.click("#evaluate-form button[type=submit]")
    error = page.locator('[data-error-for="candidates"]')
    error.filter(has_text="candidates[0].changes.height").wait_for()
    page.fill(
        "#evaluate-candidates",
        '[{"height": 2}, {"explorer": "epsilon_greedy", "explorer_parameter": 0.1}]',
    )
    # every state the page shows on the way: the progress bar, then the report
    page.evaluate(
        """() => { window.seen = [];
        new MutationObserver(() => { const p = document.getElementById('evaluate-progress');
          if (p) window.seen.push(p.getAttribute('value')); })
          .observe(document.getElementById('evaluate-out'), {childList: true, subtree: true}); }"""
    )
    page.click("#evaluate-form button[type=submit]")
    assert error.inner_text() == ""
    page.wait_for_selector("#evaluate-results", timeout=120_000)
    assert page.locator("#evaluate-status").inner_text() == "succeeded"
    assert len(page.evaluate("window.seen")) >= 1  # a running job was shown with its bar
    names = page.locator("#evaluate-results tbody th").all_inner_texts()
    assert [n.split()[0] for n in names] == ["current", "candidate-0", "candidate-1"]
    job = admin.get(f"/v1/models/{MODEL}/evaluations").json()["evaluations"][-1]
    report = admin.get(f"/v1/models/{MODEL}/evaluations/{job['id']}").json()["result"]
    snips = report["candidates"]["candidate-1"]["snips"]
    cell = page.locator("#evaluate-results tr[data-candidate='candidate-1'] td").first
    assert cell.inner_text().startswith(
        "withheld" if snips is None else f"{1 - snips:.3g}".rstrip("0").rstrip(".")
    )
    shot(page, "evaluate")
    page.click("#evaluate-results button[data-create='candidate-0']")
    page.wait_for_function(
        f"document.getElementById('toast').textContent.includes('{MODEL}-candidate-0')"
    )
    assert admin.get(f"/v1/models/{MODEL}-candidate-0").json()["config"]["height"] == 2
    # the evaluation stays on the server: the tab opened again shows it
    again = open_tab(console, "evaluate")
    again.wait_for_selector("#evaluate-results")
    assert again.locator("#evaluate-past button[data-job]").count() >= 1


def test_evaluate_needs_an_admin_key_to_run(console: Any, trained: str) -> None:
    page = open_tab(console, "evaluate", key=APP_KEY)
    assert page.locator("#evaluate-form button[type=submit]").is_disabled()
    page.click("#evaluate-prepare")
    assert "banditree evaluate" in page.locator("#evaluate-commands").inner_text()
