"""A boosted model's Policy and Trace pages in a browser: its online tree, labelled as the
tree its decisions blend with the ensemble, with the ensemble's weight."""

from __future__ import annotations

import json
import random
from typing import Any

import httpx

from tests.console.traffic import NAMED, context, create, feed

MODEL = "pages-boosted"


def test_policy_and_trace_draw_the_online_tree_with_the_blend(
    console: Any, admin: httpx.Client
) -> None:
    config = {k: v for k, v in NAMED.items() if k != "kind"}  # the default kind: boosted
    create(admin, MODEL, {**config, "options": {"first_fit": 40}})
    feed(admin, MODEL, 120)
    exported = admin.get(f"/v1/models/{MODEL}/tree").json()["model"]
    assert exported["kind"] == "boosted" and exported["blend"]["ensemble_decides"]
    page = console().open(f"#/models/{MODEL}/policy")
    page.wait_for_selector("svg.tree g.leaf")
    assert page.locator("svg.tree g.leaf").count() == len(exported["online_tree"]["tree"]["leaves"])
    note = page.locator("#blend-note").inner_text()
    weight = exported["blend"]["ensemble_weight"]
    assert "online tree" in note and "the ensemble's weight in the blend is now" in note
    assert f"{exported['blend']['n_trees']} trees" in note and f"{weight:.3g}"[:4] in note
    page = console().open(f"#/models/{MODEL}/trace")
    page.wait_for_selector("#trace-trees svg.tree")
    page.fill("#trace-input", json.dumps(context(random.Random(3))))
    page.click("#trace-form button[type=submit]")
    page.wait_for_selector("#trace-blend")
    assert "the tree alone would play action" in page.locator("#trace-blend").inner_text()
    assert page.locator("#trace-greedy").count() == 1
