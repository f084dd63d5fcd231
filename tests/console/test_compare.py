"""Versions compared on the Policy page: a checkpoint picked, what moved since it shown."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from tests.console.conftest import ADMIN_KEY, APP_KEY, shot
from tests.console.traffic import NAMED, create, feed
from tests.service.live_server import LiveServer

MODEL = "compare-named"


def leaves_of(exported: dict[str, Any]) -> list[list[float]]:
    """Each leaf's values of a one-tree export (named or not)."""
    model = exported["model"]
    tree = model.get("tree") or model
    return [leaf["value"] for leaf in tree["leaves"]]


def moved(before: list[list[float]], now: list[list[float]]) -> int:
    """How many leaves' values moved (the console's tolerance: 1e-6 of their size)."""
    count = 0
    for was, is_ in zip(before, now, strict=True):
        largest = max(abs(v - w) for v, w in zip(is_, was, strict=True))
        count += largest > 1e-6 * max(1.0, *(abs(v) for v in is_))
    return count


@pytest.fixture(scope="module")
def retrained(server: LiveServer) -> Iterator[tuple[int, int]]:
    """The model after more traffic: (its first checkpoint's sequence, its newest's)."""
    with server.client(ADMIN_KEY) as client:
        create(client, MODEL, NAMED)
        feed(client, MODEL, 200, seed=1)
        first = client.post(f"/v1/models/{MODEL}/checkpoints").json()["sequence"]
        feed(client, MODEL, 400, seed=2)
        newest = client.post(f"/v1/models/{MODEL}/checkpoints").json()["sequence"]
        yield first, newest


def test_policy_shows_what_moved_since_a_checkpoint(
    console: Any, retrained: tuple[int, int], admin: httpx.Client
) -> None:
    first, newest = retrained
    then = admin.get(f"/v1/models/{MODEL}/checkpoints/{first}/tree").json()
    now = admin.get(f"/v1/models/{MODEL}/tree").json()
    expected = moved(leaves_of(then), leaves_of(now))
    assert expected > 0  # 400 more rounds moved some leaf
    page = console(APP_KEY).open(f"#/models/{MODEL}/policy")
    page.wait_for_selector("svg.tree g.leaf")
    page.select_option("#compare-checkpoint", str(first))
    page.wait_for_selector("#compare-out .compare-summary")
    summary = page.locator("#compare-out .compare-summary").inner_text()
    assert f"{expected} of 8 leaves' values changed" in summary
    assert page.locator("#compare-out .compare-leaves tbody tr").count() == expected
    assert (
        f"checkpoint {first} (version {then['version']})"
        in page.locator("#compare-out h2").inner_text()
    )
    shot(page, "policy-compare")
    # the newest checkpoint holds the served model: nothing moved
    page.select_option("#compare-checkpoint", str(newest))
    page.wait_for_function(
        f"document.querySelector('#compare-out h2').textContent.includes('checkpoint {newest} ')"
    )
    summary = page.locator("#compare-out .compare-summary").inner_text()
    assert "0 of 7 splits changed" in summary and "0 of 8 leaves' values changed" in summary
