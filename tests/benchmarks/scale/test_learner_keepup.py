"""``benchmarks.scale.learner_keepup``: the service's learner is timed with the heap frozen as a
serving process freezes it, the heap is given back after, and its CPU is split by part."""

from __future__ import annotations

import asyncio
import gc
from pathlib import Path

import pytest

from banditree.core.codec import BINARY_PREFIX, read_decision
from benchmarks.scale.learner_keepup import (
    as_json,
    bare_rate,
    medians,
    served_heap,
    service_learner_seconds,
    vw_native_rate,
)
from benchmarks.scale.log_scale import CONFIG, UID, fill, make_pairs
from service.store import SqliteStore


def test_served_heap_freezes_then_gives_the_heap_back() -> None:
    threshold = gc.get_threshold()
    with served_heap(True):
        assert gc.get_freeze_count() > 0  # the objects made before: out of the walks
        assert gc.get_threshold() == threshold  # CPython's, as in a serving process
    assert gc.get_freeze_count() == 0
    assert gc.get_threshold() == threshold
    with served_heap(False):
        assert gc.get_freeze_count() == 0


def test_the_service_learner_is_timed_with_its_cpu_split(
    tmp_path: Path,
) -> None:
    pairs = make_pairs(300)
    # collections often enough that 300 entries see some
    threshold = gc.get_threshold()
    gc.set_threshold(100, *threshold[1:])

    async def scenario() -> dict[str, float]:
        store = SqliteStore(tmp_path)
        try:
            await fill(store, pairs, 1_000.0)
            seen: list[int] = []
            gc.callbacks.append(lambda phase, info: seen.append(gc.get_freeze_count()))
            try:
                took = await service_learner_seconds(store, len(pairs))
            finally:
                gc.callbacks.pop()
            assert max(seen) > 0  # the collections while it was timed: heap frozen
            return took
        finally:
            await store.close()

    try:
        took = asyncio.run(scenario())
    finally:
        gc.set_threshold(*threshold)
    assert gc.get_freeze_count() == 0
    assert took["wall"] > 0 and took["cpu"] > 0
    assert 0 < took["loop_cpu"] <= took["cpu"] and 0 <= took["gc_cpu"] <= took["cpu"]
    assert bare_rate(pairs)[1] > 0 and gc.get_freeze_count() == 0


def test_the_figures_are_the_rounds_medians() -> None:
    rounds = [{"ratio": 0.80, "recovery_seconds": 5.4}, {"ratio": 0.95, "recovery_seconds": 4.6},
              {"ratio": 0.91, "recovery_seconds": 4.9}]  # fmt: skip
    assert medians(rounds) == {"ratio": 0.91, "recovery_seconds": 4.9}


def test_vowpal_wabbit_learns_the_logged_examples_from_a_file(tmp_path: Path) -> None:
    """The VW row: each logged pair as one ADF example (the context shared, one line per
    action, the played one labelled with its loss and propensity), learned by VW."""
    pytest.importorskip("vowpalwabbit")
    pairs = make_pairs(40)
    rates = vw_native_rate(pairs, tmp_path)
    assert rates is not None and min(rates) > 0
    examples = (tmp_path / "vw_examples.txt").read_text().strip("\n").split("\n\n")
    assert len(examples) == len(pairs)
    for example in examples:
        shared, *actions = example.split("\n")
        assert shared.startswith("shared |s f0:") and len(actions) == 10
        labelled = [line for line in actions if not line.startswith("|a ")]
        assert len(labelled) == 1 and labelled[0].startswith("0:")


def test_the_boosted_row_learns_the_log_through_the_service(tmp_path: Path) -> None:
    pairs = make_pairs(260)
    config = {**CONFIG, "kind": "boosted", "n_trees": 5}

    async def scenario() -> dict[str, float]:
        store = SqliteStore(tmp_path)
        try:
            await fill(store, pairs, 1_000.0)
            return await service_learner_seconds(store, len(pairs), True, config)
        finally:
            await store.close()

    took = asyncio.run(scenario())
    assert took["wall"] > 0 and took["cpu"] > 0
    assert bare_rate(pairs, True, config)[1] > 0


def test_the_json_log_holds_the_same_decisions_in_the_old_form() -> None:
    """``--stored json|both``: the same decisions and feedbacks, the decisions as the JSON
    records of the versions before the binary form."""
    pairs = make_pairs(20)
    old = as_json(pairs)
    assert all(d.startswith(BINARY_PREFIX) for _, d, _ in pairs)
    assert all(d.startswith('{"uid":') for _, d, _ in old)
    assert [(e, f) for e, _, f in old] == [(e, f) for e, _, f in pairs]
    assert [read_decision(d, UID) for _, d, _ in old] == [
        read_decision(d, UID) for _, d, _ in pairs
    ]
