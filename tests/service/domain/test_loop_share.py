"""``LoopShare``: a long pass over every model lets other tasks run between its steps."""

from __future__ import annotations

import asyncio

from service.domain.runtime.tasks import LoopShare


async def _pass(share: LoopShare, steps: int, seen: list[int], ticks: list[int]) -> None:
    """A pass whose steps never suspend on their own (like calls to the embedded store)."""
    for _ in range(steps):
        await share.turn()
        seen.append(len(ticks))


async def _other(ticks: list[int], stop: asyncio.Event) -> None:
    while not stop.is_set():
        ticks.append(1)
        await asyncio.sleep(0)


def test_a_pass_past_its_slice_lets_another_task_run_between_steps() -> None:
    async def scenario(slice_seconds: float) -> list[int]:
        ticks: list[int] = []
        seen: list[int] = []
        stop = asyncio.Event()
        other = asyncio.create_task(_other(ticks, stop))
        await asyncio.sleep(0)
        await _pass(LoopShare(slice_seconds), 5, seen, ticks)
        stop.set()
        await other
        return seen

    # a slice already spent at every step: the other task runs before each one
    assert asyncio.run(scenario(0.0)) == [2, 3, 4, 5, 6]
    # a slice never spent: the pass holds the loop from start to end
    assert asyncio.run(scenario(3600.0)) == [1, 1, 1, 1, 1]
