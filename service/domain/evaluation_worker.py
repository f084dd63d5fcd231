"""An evaluation's replay in a process of its own (:mod:`service.domain.evaluations`).

Replaying a log through every candidate is minutes of Python and numpy work that holds
the interpreter's lock for long stretches: in a thread of the serving process it slows
every predict while it runs.  It runs instead in a child process, one per evaluation,
forked from a fork server (``forkserver``: started at the first evaluation, it imports
this module and scikit-learn once, and nothing of the serving process is inherited).
The child reports through two shared integers (rows replayed, the stage) and stops at
its next row once a shared event is set.  The log table and the configurations go to the child
and the report comes back through the pipe of :mod:`concurrent.futures`.
"""

from __future__ import annotations

import asyncio
import multiprocessing
from collections.abc import Mapping
from concurrent.futures import ProcessPoolExecutor
from typing import Any

from banditree.evaluation import CandidateOptions, evaluate_candidates
from banditree.logs import LogTable

#: the stage numbers before the child's first report and while the reward model is
#: fitted (a candidate's replay: its index)
STARTING, FITTING = -2, -1
#: seconds between two reads of the child's progress
POLL_SECONDS = 0.2
_FORKSERVER = "forkserver" in multiprocessing.get_all_start_methods()
#: ``spawn`` where there is no fork server (Windows): each child imports on its own
_CONTEXT = multiprocessing.get_context("forkserver" if _FORKSERVER else "spawn")
if _FORKSERVER:  # the fork server imports the evaluation once; each child is forked from it
    _CONTEXT.set_forkserver_preload([__name__, "sklearn.linear_model"])
_shared: tuple[Any, Any, Any] | None = None


class Stopped(Exception):
    """The evaluation was deleted while it ran."""


def _start(done: Any, stage: Any, stop: Any) -> None:
    global _shared
    _shared = (done, stage, stop)


def _evaluate(
    table: LogTable, configs: dict[str, dict[str, Any]], options: CandidateOptions
) -> dict[str, Any]:
    assert _shared is not None, "run by the pool's initializer first"
    done, stage, stop = _shared
    names = list(configs)

    def on_row(count: int) -> None:
        if stop.is_set():
            raise Stopped("deleted while it ran")
        done.value += count

    def on_stage(text: str) -> None:
        prefix = "replaying "
        stage.value = names.index(text[len(prefix) :]) if text.startswith(prefix) else FITTING

    return evaluate_candidates(table, configs, options, on_row=on_row, on_stage=on_stage)


async def evaluate_apart(
    table: LogTable,
    configs: Mapping[str, dict[str, Any]],
    options: CandidateOptions,
    progress: Any,
) -> dict[str, Any]:
    """:func:`banditree.evaluation.evaluate_candidates` in a child process.

    ``progress`` (a :class:`service.domain.jobs.Progress`) follows the child: ``done``
    rows of ``len(configs) x n_rows``, the stage by name; once ``progress.cancelled``
    (or this coroutine is cancelled) the child stops at its next row.
    """
    names = list(configs)
    done, stage, stop = (
        _CONTEXT.RawValue("q", 0),
        _CONTEXT.RawValue("i", STARTING),
        _CONTEXT.Event(),
    )
    pool = ProcessPoolExecutor(
        1, mp_context=_CONTEXT, initializer=_start, initargs=(done, stage, stop)
    )
    stages = {STARTING: "starting the evaluation process", FITTING: "fitting the reward model"}
    progress.begin(stages[STARTING], len(names) * table.n_rows)
    try:
        # starting the child (and, the first time, the fork server) waits on processes:
        # off the event loop
        started = await asyncio.to_thread(pool.submit, _evaluate, table, dict(configs), options)
        future = asyncio.wrap_future(started)
        while not future.done():
            await asyncio.wait({future}, timeout=POLL_SECONDS)
            progress.done = int(done.value)
            index = int(stage.value)
            progress.stage = stages[index] if index < 0 else f"replaying {names[index]}"
            if progress.cancelled:
                stop.set()
        progress.done = int(done.value)
        return future.result()
    finally:
        stop.set()  # a cancelled job's child stops at its next row
        pool.shutdown(wait=False, cancel_futures=True)
