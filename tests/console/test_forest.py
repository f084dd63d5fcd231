"""A forest of numeric contexts in a browser: every tree drawn, splits in the caller's units."""

from __future__ import annotations

import json
import random
from typing import Any

import httpx
import pytest

from tests.console.traffic import create

MODEL = "forest-numeric"
CONFIG = {"kind": "dgt_forest", "n_trees": 3, "height": 3, "n_features": 3, "n_actions": 2}


def test_forest_trees_and_a_trace_through_each(console: Any, admin: httpx.Client) -> None:
    create(admin, MODEL, CONFIG)
    r = random.Random(1)
    contexts = [[r.gauss(50, 10), r.gauss(0, 1), r.gauss(-5, 2)] for _ in range(200)]
    for d, x in zip(
        admin.post(f"/v1/models/{MODEL}/predict", json={"contexts": contexts}).json()["decisions"],
        contexts,
        strict=True,
    ):
        admin.post(
            f"/v1/models/{MODEL}/feedback",
            json={"event_id": d["event_id"], "loss": float(d["action"] != (x[0] > 50))},
        )
    watched = console()
    page = watched.open(f"#/models/{MODEL}/policy")
    page.wait_for_selector(".tree-wrap svg.tree")
    assert page.locator(".tree-wrap").count() == 3
    labels = page.locator("svg.tree g.node title").all_text_contents()
    assert any("x0" in label for label in labels)
    # the split terms are in the caller's units: x0's weight is divided by its scale (~10)
    scaling = admin.get(f"/v1/models/{MODEL}/leaves").json()["scaling"]
    assert scaling["scale"][0] == pytest.approx(10, rel=0.3)
    page.keyboard.press("3")  # the Trace tab
    page.wait_for_selector("#trace-form")
    page.fill("#trace-input", json.dumps([60.0, 0.0, -5.0]))
    page.keyboard.press("Control+Enter")
    page.wait_for_selector("#trace-probabilities tbody tr")
    assert page.locator("svg.tree g.on").count() == 3 * 4
    expected = admin.post(f"/v1/models/{MODEL}/trace", json={"context": [60.0, 0.0, -5.0]}).json()
    leaves = [t["leaf"] for t in expected["traces"][0]["trees"]]
    for t, leaf in enumerate(leaves):
        assert page.locator(f".tree-wrap:nth-child({t + 1}) g.leaf.on").get_attribute(
            "data-leaf"
        ) == str(leaf)
