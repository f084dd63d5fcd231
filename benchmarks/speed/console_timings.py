"""The console's timings, read from the browser's own clock (``performance`` entries).

Starts a real ``banditree serve`` (the embedded store in a temporary directory), creates
``--models`` small models from 8 concurrent clients, a 10-tree height-8 forest fed with
traffic, and a named single tree, then drives Debian's chromium (Playwright, headless)
through the console and prints, against the goals:

* overview: the time from navigation start to the models table filled and its handlers
  attached (``overview-interactive``; < 1 s with 1,000 models), the browser's first page
  and a reload of it, with the list request's time and size and the render alone;
* forest: the 10 trees of height 8 drawn (``policy-draw``: 5,110 SVG nodes; < 500 ms),
  and the page's whole time with its two API calls;
* trace: from the submit to the highlighted path and the answer (``trace``; < 100 ms),
  the median and the largest of ``--traces`` traces.

    python -m benchmarks.speed.console_timings [--models 1000] [--traces 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parents[2]
SMALL = {"kind": "linear", "n_features": 4, "n_actions": 3}
FOREST = {"kind": "dgt_forest", "n_trees": 10, "height": 8, "n_features": 6, "n_actions": 4}
GOALS_MS = {"overview": 1000.0, "forest": 500.0, "trace": 100.0}
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run"]  # fmt: skip


def start_server(port: int, data: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "BANDITREE_DATA_DIR": str(data), "PYTHONPATH": str(ROOT)}
    argv = [
        sys.executable,
        "-m",
        "banditree_cli",
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    process = subprocess.Popen(
        argv, env=env, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT
    )
    for _ in range(600):
        try:
            if httpx.get(f"http://127.0.0.1:{port}/readyz", timeout=1).status_code == 200:
                return process
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    process.kill()
    raise RuntimeError("the service did not start")


def populate(url: str, models: int) -> None:
    with httpx.Client(base_url=url, timeout=60) as client:

        def put(i: int) -> int:
            return client.put(f"/v1/models/bench-{i:05d}", json=SMALL).status_code

        with ThreadPoolExecutor(8) as pool:
            codes = list(pool.map(put, range(models)))
        assert all(c == 201 for c in codes), f"{sum(c != 201 for c in codes)} creates failed"
        assert client.put("/v1/models/forest", json=FOREST).status_code == 201
        r = random.Random(0)
        for _ in range(10):
            contexts = [[r.gauss(0, 1) for _ in range(6)] for _ in range(100)]
            for d in client.post("/v1/models/forest/predict", json={"contexts": contexts}).json()[
                "decisions"
            ]:
                client.post(
                    "/v1/models/forest/feedback",
                    json={"event_id": d["event_id"], "loss": r.random()},
                )


def measure(url: str, traces: int) -> dict[str, Any]:
    from playwright.sync_api import sync_playwright

    chromium = shutil.which("chromium") or shutil.which("chromium-browser")
    if chromium is None:
        raise SystemExit("chromium is not installed (apt-get install chromium)")
    out: dict[str, Any] = {}
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=chromium, headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1600, "height": 1000})
        page.goto(f"{url}/ui/#/")
        page.wait_for_selector("body[data-ready=true]")
        entry = page.evaluate("performance.getEntriesByName('overview-interactive')[0].startTime")
        out["overview_interactive_ms"] = entry
        out["overview_render_ms"] = page.evaluate(
            "performance.getEntriesByName('overview')[0].duration"
        )
        out["overview_rows"] = page.locator("#models-body tr").count()
        fetched = page.evaluate(
            "performance.getEntriesByType('resource').filter(e => /\\/v1\\/models(\\?|$)/.test(e.name))"
            ".map(e => [e.startTime, e.duration, e.encodedBodySize])[0]"
        )
        out["models_fetch_start_ms"], out["models_fetch_ms"], out["models_bytes"] = fetched
        # the rates and trends (GET /v1/series) fill the drawn table when they come
        page.wait_for_function("performance.getEntriesByName('overview-figures').length > 0")
        out["overview_figures_ms"] = page.evaluate(
            "performance.getEntriesByName('overview-figures')[0].startTime"
        )
        out["series_start_ms"], out["series_fetch_ms"], out["series_bytes"] = page.evaluate(
            "performance.getEntriesByType('resource').filter(e => /\\/v1\\/series$/.test(e.name))"
            ".map(e => [e.startTime, e.duration, e.encodedBodySize])[0]"
        )
        page.reload()  # the same page again, the browser already running
        page.wait_for_selector("body[data-ready=true]")
        out["overview_reload_ms"] = page.evaluate(
            "performance.getEntriesByName('overview-interactive')[0].startTime"
        )
        page.goto(f"{url}/ui/#/models/forest/policy")
        page.wait_for_selector("svg.tree g.leaf")
        out["forest_draw_ms"] = page.evaluate(
            "performance.getEntriesByName('policy-draw')[0].duration"
        )
        out["forest_page_ms"] = page.evaluate("performance.getEntriesByName('policy')[0].duration")
        out["forest_nodes"] = page.locator("svg.tree g[data-node]").count()
        page.goto(f"{url}/ui/#/models/forest/trace")
        page.wait_for_selector("#trace-form")
        times = []
        for i in range(traces):
            page.fill("#trace-input", json.dumps([0.1 * i, -0.2, 0.3, 0.0, 1.0, -1.0]))
            page.click("#trace-form button[type=submit]")
            page.wait_for_function(f"performance.getEntriesByName('trace').length >= {i + 1}")
        times = page.evaluate("performance.getEntriesByName('trace').map(e => e.duration)")
        out["trace_ms"] = times
        browser.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=int, default=1000)
    parser.add_argument("--traces", type=int, default=20)
    parser.add_argument(
        "--rounds", type=int, default=3, help="browser sessions; figures are medians"
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data:
        import socket

        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        server = start_server(port, Path(data))
        try:
            url = f"http://127.0.0.1:{port}"
            started = time.perf_counter()
            populate(url, args.models)
            print(
                f"{args.models} models and the forest created in {time.perf_counter() - started:.1f} s"
            )
            runs = []
            for k in range(args.rounds):
                runs.append(measure(url, args.traces))
                print(
                    f"round {k + 1}:",
                    json.dumps({n: v for n, v in runs[-1].items() if n != "trace_ms"}),
                )
        finally:
            server.terminate()
            server.wait(timeout=60)
    r = {n: statistics.median(run[n] for run in runs) for n in runs[0] if n != "trace_ms"}
    r["trace_ms"] = [t for run in runs for t in run["trace_ms"]]
    print(f"medians of {len(runs)} browser sessions (trace: of all {len(r['trace_ms'])} traces):")
    report(r)


def report(r: dict[str, Any]) -> None:
    """One line a goal: the figure, the verdict, what explains it."""
    trace = r["trace_ms"]
    rows = [
        (
            "overview",
            f"{r['overview_rows']} rows interactive",
            r["overview_interactive_ms"],
            f"GET /v1/models {r['models_fetch_ms']:.0f} ms, {r['models_bytes'] / 1e6:.1f} MB, "
            f"asked at {r['models_fetch_start_ms']:.0f} ms; render {r['overview_render_ms']:.0f} ms",
        ),
        (
            "overview",
            "rates and trends filled",
            r["overview_figures_ms"],
            f"GET /v1/series {r['series_fetch_ms']:.0f} ms, {r['series_bytes'] / 1e6:.2f} MB, "
            f"asked at {r['series_start_ms']:.0f} ms",
        ),
        ("overview", "the same, reloaded", r["overview_reload_ms"], "the browser already running"),
        (
            "forest",
            f"{r['forest_nodes']} SVG nodes drawn",
            r["forest_draw_ms"],
            f"page with its API calls {r['forest_page_ms']:.0f} ms",
        ),
        (
            "trace",
            f"median of {len(trace)}",
            statistics.median(trace),
            f"largest {max(trace):.0f} ms",
        ),
    ]
    for name, what, ms, note in rows:
        verdict = "meets" if ms < GOALS_MS[name] else "MISSES"
        print(f"{name:9s} {what:28s} {ms:7.1f} ms  ({verdict} < {GOALS_MS[name]:.0f} ms; {note})")


if __name__ == "__main__":
    main()
