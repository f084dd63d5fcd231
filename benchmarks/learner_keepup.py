"""Does the service's learner keep up? Its pace against the bare ``learner.learn`` loop.

One command::

    python -m benchmarks.learner_keepup [--entries 100000] [--store sqlite|redis]

A model (DGT h=6, 16 features, 10 actions) whose log holds ``--entries`` feedbacks after
its only checkpoint (what a learner finds after ``kill -9``) is learned by the service's
own :class:`~service.runtime.learner.ModelLearner` (lease, batched reads, the decoding,
the learner thread, metrics, checkpoints at the service's default pace): the seconds
from its start to the last entry applied (the recovery time, process start aside) and
its pace, against the bare ``learner.learn`` loop on the same pairs, decoded
beforehand, in the same run.  Goals (issue 28): pace >= 0.9x the bare loop and >= 5,000
feedbacks/s; recovery of 100,000 entries < 5 s.  On a shared machine the wall-clock
figures move with the load; the CPU-second figures (this process's CPU time) do less.  ``bare_learn_batch_per_cpu_second`` is
the library's ``learn_batch`` alone (64 pairs a call), which the service's learner uses.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

import orjson

from banditree.learners import Feedback, build_learner
from benchmarks.log_scale import CONFIG, UID, fill, make_pairs
from service.metrics import ServiceMetrics
from service.runtime.idle import IdleLearners
from service.runtime.learner import LearnerPolicy, ModelLearner
from service.runtime.replay import read_decision
from service.store import RedisStore, SqliteStore, Store


def bare_rate(pairs: list[tuple[str, str, str]]) -> tuple[float, float]:
    """Feedbacks per second of ``learner.learn`` alone (decoded beforehand): per wall
    second and per CPU second of this process."""
    decoded = [(read_decision(d, UID), Feedback.from_dict(orjson.loads(f))) for _, d, f in pairs]
    learner = build_learner(CONFIG)
    started, cpu = time.perf_counter(), time.process_time()
    for decision, feedback in decoded:
        assert decision is not None
        learner.learn(decision, feedback)
    return (
        len(decoded) / (time.perf_counter() - started),
        len(decoded) / (time.process_time() - cpu),
    )


def bare_batch_rate(pairs: list[tuple[str, str, str]], chunk: int = 64) -> float:
    """Feedbacks per CPU second of ``learner.learn_batch`` alone, ``chunk`` pairs a call
    (what the service's learner calls; the same state as the ``learn`` loop)."""
    decoded = [(read_decision(d, UID), Feedback.from_dict(orjson.loads(f))) for _, d, f in pairs]
    learner = build_learner(CONFIG)
    cpu = time.process_time()
    for start in range(0, len(decoded), chunk):
        part = decoded[start : start + chunk]
        learner.learn_batch([d for d, _ in part], [f for _, f in part])  # type: ignore[misc]
    return len(decoded) / (time.process_time() - cpu)


async def service_learner_seconds(store: Store, entries: int) -> tuple[float, float]:
    """Seconds from a ModelLearner's start to its last entry applied: wall, and CPU of
    this process (the event loop, the learner's thread, the store client)."""
    metrics = ServiceMetrics()
    idle = IdleLearners(store, holder="bench", lease_seconds=3.0)
    learner = ModelLearner(
        name="m", uid=UID, config=CONFIG,
        policy=LearnerPolicy(every_updates=1000, every_seconds=1.0, keep=3, default_loss=None,
                             lease_seconds=3.0),
        store=store, metrics=metrics.for_model("m"), holder="bench", idle=idle,
    )  # fmt: skip
    started, cpu = time.perf_counter(), time.process_time()
    learner.start()
    while learner.offset < entries:
        await asyncio.sleep(0.005)
    took = time.perf_counter() - started, time.process_time() - cpu
    await learner.stop()
    await idle.stop()
    return took


async def run(args: argparse.Namespace) -> dict[str, float]:
    pairs = make_pairs(args.entries)
    sample = pairs[: min(len(pairs), 20_000)]
    bare, bare_cpu = bare_rate(sample)
    with tempfile.TemporaryDirectory() as tmp:
        if args.store == "redis":
            store: Store = RedisStore.from_url(
                args.redis_url, prefix=f"keepup:{time.time()}:", timeout_seconds=5.0
            )
        else:
            store = SqliteStore(Path(tmp))
        await fill(store, pairs, time.time())
        seconds, cpu_seconds = await service_learner_seconds(store, len(pairs))
        if isinstance(store, RedisStore):
            keys = [k async for k in store.client.scan_iter(match=store.prefix + "*")]
            for key in keys:
                await store.client.delete(key)
        await store.close()
    again, again_cpu = bare_rate(sample)  # before and after: the better of the two
    bare, bare_cpu = max(bare, again), max(bare_cpu, again_cpu)
    batch_cpu = bare_batch_rate(sample)
    return {
        "entries": float(len(pairs)),
        "bare_learn_per_second": bare,
        "service_learner_per_second": len(pairs) / seconds,
        "ratio": len(pairs) / seconds / bare,
        "bare_learn_per_cpu_second": bare_cpu,
        "service_learner_per_cpu_second": len(pairs) / cpu_seconds,
        "cpu_ratio": len(pairs) / cpu_seconds / bare_cpu,
        "bare_learn_batch_per_cpu_second": batch_cpu,
        "recovery_seconds": seconds,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--store", choices=["sqlite", "redis"], default="sqlite")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    args = parser.parse_args()
    figures = asyncio.run(run(args))
    for key, value in figures.items():
        print(f"{key:32s} {value:,.2f}")
    print(
        f"goals: ratio >= 0.9 {'met' if figures['ratio'] >= 0.9 else 'NOT met'}; "
        f">= 5,000/s {'met' if figures['service_learner_per_second'] >= 5000 else 'NOT met'}; "
        f"recovery < 5 s {'met' if figures['recovery_seconds'] < 5 else 'NOT met'}"
    )


if __name__ == "__main__":
    main()
