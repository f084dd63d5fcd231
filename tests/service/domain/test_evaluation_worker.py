"""An evaluation replays in a child process: its progress is followed, a delete stops it."""

from __future__ import annotations

import asyncio
import multiprocessing

import numpy as np
import pytest

from banditree.evaluation import CandidateOptions
from banditree.logs.table import LogTable, table_from_columns
from service.domain.evaluation_worker import Stopped, evaluate_apart
from service.domain.jobs import Progress

pytestmark = pytest.mark.anyio
CONFIG = {"kind": "dgt", "n_features": 3, "n_actions": 2, "height": 2}


def uniform_log(n: int) -> LogTable:
    rng = np.random.default_rng(0)
    context = rng.normal(size=(n, 3))
    action = rng.integers(0, 2, n)
    columns = {
        "offset": np.arange(1, n + 1),
        "context": context,
        "action": action,
        "propensity": np.full(n, 0.5),
        "loss": (action != (context[:, 0] > 0)).astype(float),
    }
    return table_from_columns("log", columns, n).check()


async def test_the_child_reports_progress_and_the_report() -> None:
    progress = Progress()
    found = await evaluate_apart(
        uniform_log(400), {"current": CONFIG}, CandidateOptions(n_bootstrap=20), progress
    )
    assert progress.done == progress.total == 400
    assert found["log"]["n_rows"] == 400 and set(found["candidates"]) == {"current"}


async def test_a_cancelled_evaluation_stops_its_child() -> None:
    progress = Progress()
    configs = {f"c{i}": CONFIG for i in range(4)}
    task = asyncio.create_task(
        evaluate_apart(uniform_log(20_000), configs, CandidateOptions(n_bootstrap=20), progress)
    )
    for _ in range(600):
        if progress.done > 0:
            break
        await asyncio.sleep(0.05)
    assert 0 < progress.done < progress.total and progress.stage.startswith("replaying c")
    assert multiprocessing.active_children()  # the child replaying
    progress.cancelled = True
    with pytest.raises(Stopped):
        await task
    for _ in range(200):  # the child exits (the fork server, not a child, stays)
        workers = multiprocessing.active_children()
        if not workers:
            break
        await asyncio.sleep(0.05)
    assert not workers
