"""Does the service's learner keep up? Its pace against the bare ``learner.learn`` loop.

One command::

    python -m benchmarks.scale.learner_keepup [--entries 100000] [--store sqlite|redis] [--rounds 3]
        [--kind dgt|boosted] [--stored binary|json|both]

A model (DGT h=6, 16 features, 10 actions; ``--kind boosted``: the boosted family of the
same shape, its refits included, LightGBM imported when the learner takes the model, as
the service does) whose log holds ``--entries`` feedbacks after
its only checkpoint (what a learner finds after ``kill -9``) is learned by the service's
own :class:`~service.domain.runtime.learner.ModelLearner` (lease, batched reads, the decoding,
the learner thread, metrics, checkpoints at the service's default pace): the seconds
from its start to the last entry applied (the recovery time, process start aside) and
its pace, against the bare ``learner.learn`` loop on the same pairs, decoded
beforehand, in the same run.  Goals (issue 28): pace >= 0.9x the bare loop and >= 5,000
feedbacks/s; recovery of 100,000 entries < 5 s.  On a shared machine the wall-clock
figures move with the load (one run's ratio by +-0.05 on a 2-core machine); the
CPU-second figures (this process's CPU time) do less.  Where the optional
``vowpalwabbit`` is installed, each round also times Vowpal Wabbit learning the same
logged examples from a text file with its own parser and loop (:data:`VW_ARGUMENTS`,
issue 43's baseline) and prints the service learner's pace against it.  Each of ``--rounds`` rounds
learns a fresh log and times the bare loop right after it; every round is printed, and
the figures and the goals' verdicts are the rounds' medians.  ``bare_learn_batch_per_cpu_second`` is
the library's ``learn_batch`` alone (512 pairs a call), which the service's learner uses.
The service's CPU is split: ``loop_thread_us_per_entry`` (the event loop's thread: log
reads, lease and checkpoint calls), ``other_threads_us_per_entry`` (the learner's slices,
checkpoint serialising and saving, the store's own threads) and ``gc_us_per_entry``
(the garbage collector's share of both, timed through ``gc.callbacks``).

Each timed part (the bare loops, the service's learner) runs with the heap as a serving
process keeps it: what was made before it frozen out of the collector's walks
(``gc.freeze``, as ``banditree serve``'s ``HeapFreezer`` does once a learner leads), so
that the benchmark's own data (its 100,000 pairs) is not walked by every collection of the old generation, which no service's collections do.
``--no-freeze`` times them with that data walked (the collector then takes 0.6-1.5 us
more an entry of the service's learner, little of the bare loops).

The log holds its decisions in the stored form predict writes (``--stored binary``, the
default: ``banditree.core.codec.binary_payload``), or in the JSON form of the versions
before it (``json``); ``both`` learns a log of each form in every round, the JSON one's
figures under ``json_*``.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import orjson

from banditree.core.codec import decision_record, read_decision, record_json
from banditree.learners import Feedback, build_learner
from banditree.learners.boosted.refits import preload_lightgbm
from benchmarks.scale.log_scale import CONFIG, UID, fill, make_pairs
from service.domain.runtime.idle import IdleLearners
from service.domain.runtime.learner import LearnerPolicy, ModelLearner
from service.domain.runtime.learner_steps import MAX_CHUNK
from service.store import RedisStore, SqliteStore, Store
from service.telemetry.metrics import ServiceMetrics


@contextlib.contextmanager
def served_heap(freeze: bool) -> Iterator[None]:
    """The heap as a serving process keeps it (see the module): with ``freeze``, every
    object made so far is left out of the collections until the block ends (then all
    frozen objects are given back: the benchmark freezes nothing else).  The collector's
    thresholds stay CPython's, as in a serving process."""
    if not freeze:
        yield
        return
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def bare_rate(
    pairs: list[tuple[str, str, str]], freeze: bool = True, config: dict[str, Any] = CONFIG
) -> tuple[float, float]:
    """Feedbacks per second of ``learner.learn`` alone (decoded beforehand): per wall
    second and per CPU second of this process."""
    decoded = [(read_decision(d, UID), Feedback.from_dict(orjson.loads(f))) for _, d, f in pairs]
    learner = build_learner(config)
    learner.prepare_to_learn()
    with served_heap(freeze):
        started, cpu = time.perf_counter(), time.process_time()
        for decision, feedback in decoded:
            assert decision is not None
            learner.learn(decision, feedback)
    return (
        len(decoded) / (time.perf_counter() - started),
        len(decoded) / (time.process_time() - cpu),
    )


def bare_batch_rate(
    pairs: list[tuple[str, str, str]],
    chunk: int = MAX_CHUNK,
    freeze: bool = True,
    config: dict[str, Any] = CONFIG,
) -> float:
    """Feedbacks per CPU second of ``learner.learn_batch`` alone, ``chunk`` pairs a call
    (at most what the service's learner calls; the same state as the ``learn`` loop)."""
    decoded = [(read_decision(d, UID), Feedback.from_dict(orjson.loads(f))) for _, d, f in pairs]
    learner = build_learner(config)
    learner.prepare_to_learn()
    with served_heap(freeze):
        cpu = time.process_time()
        for start in range(0, len(decoded), chunk):
            part = decoded[start : start + chunk]
            learner.learn_batch([d for d, _ in part], [f for _, f in part])  # type: ignore[misc]
        return len(decoded) / (time.process_time() - cpu)


#: Vowpal Wabbit's learner the issue compares with (issue 43): SquareCB over
#: action-dependent features, the context crossed with the action
VW_ARGUMENTS = "--cb_explore_adf --squarecb -q sa --quiet"


def vw_native_rate(pairs: list[tuple[str, str, str]], folder: Path) -> tuple[float, float] | None:
    """Feedbacks per wall and per CPU second of Vowpal Wabbit learning the same logged
    examples (context, played action, its propensity and loss) from a text file with
    its own parser, in its own C++ loop (``run_parser``: no Python per example), as
    ``vw -d FILE`` does; None without the optional ``vowpalwabbit`` package."""
    try:
        import vowpalwabbit
    except ImportError:
        return None
    n_actions = int(CONFIG["n_actions"])
    path = folder / "vw_examples.txt"
    with path.open("w") as out:
        for _, payload, feedback in pairs:
            decision = read_decision(payload, UID)
            assert decision is not None and decision.action is not None
            loss = float(orjson.loads(feedback)["loss"])
            context = cast(tuple[float, ...], decision.context)
            out.write("shared |s " + " ".join(f"f{j}:{v!r}" for j, v in enumerate(context)) + "\n")
            for k in range(n_actions):
                label = f"0:{loss!r}:{decision.propensity!r} " if k == decision.action else ""
                out.write(f"{label}|a a{k}\n")
            out.write("\n")
    started, cpu = time.perf_counter(), time.process_time()
    workspace = vowpalwabbit.Workspace(f"{VW_ARGUMENTS} -d {path}")
    workspace.run_parser()
    workspace.finish()
    return len(pairs) / (time.perf_counter() - started), len(pairs) / (time.process_time() - cpu)


class _CollectorClock:
    """CPU seconds spent in the garbage collector while installed (``gc.callbacks``)."""

    def __init__(self) -> None:
        self.seconds, self._started = 0.0, 0.0

    def __call__(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._started = time.thread_time()
        else:
            self.seconds += time.thread_time() - self._started


async def service_learner_seconds(
    store: Store, entries: int, freeze: bool = True, config: dict[str, Any] = CONFIG
) -> dict[str, float]:
    """A ModelLearner from its start to its last entry applied: the wall seconds, the CPU
    seconds of this process (the event loop, the learner's thread, the store client),
    of the event loop's thread alone, and of the garbage collector (in every thread)."""
    metrics = ServiceMetrics()
    idle = IdleLearners(store, holder="bench", lease_seconds=3.0)
    learner = ModelLearner(
        name="m", uid=UID, config=config,
        policy=LearnerPolicy(every_updates=1000, every_seconds=1.0, keep=3, default_loss=None,
                             lease_seconds=3.0),
        store=store, metrics=metrics.for_model("m"), holder="bench", idle=idle,
    )  # fmt: skip
    collector = _CollectorClock()
    with served_heap(freeze):
        gc.callbacks.append(collector)
        started, cpu, loop_cpu = time.perf_counter(), time.process_time(), time.thread_time()
        learner.start()
        await learner.reached(entries)
        took = {
            "wall": time.perf_counter() - started,
            "cpu": time.process_time() - cpu,
            "loop_cpu": time.thread_time() - loop_cpu,
            "gc_cpu": collector.seconds,
        }
        gc.callbacks.remove(collector)
    await learner.stop()
    await idle.stop()
    return took


def as_json(pairs: list[tuple[str, str, str]]) -> list[tuple[str, str, str]]:
    """The same pairs with each decision in the JSON stored form of earlier versions."""
    out = []
    for event_id, payload, feedback in pairs:
        decision = read_decision(payload, UID)
        assert decision is not None
        record = record_json({"uid": UID, "decision": decision_record(decision)})
        out.append((event_id, record, feedback))
    return out


async def learned_log(
    args: argparse.Namespace,
    pairs: list[tuple[str, str, str]],
    freeze: bool,
    config: dict[str, Any],
) -> dict[str, float]:
    """:func:`service_learner_seconds` of a fresh store holding ``pairs``' log."""
    with tempfile.TemporaryDirectory() as tmp:
        if args.store == "redis":
            store: Store = RedisStore.from_url(
                args.redis_url, prefix=f"keepup:{time.time()}:", timeout_seconds=5.0
            )
        else:
            store = SqliteStore(Path(tmp))
        await fill(store, pairs, time.time())
        took = await service_learner_seconds(store, len(pairs), freeze, config)
        if isinstance(store, RedisStore):
            keys = [k async for k in store.client.scan_iter(match=store.prefix + "*")]
            for key in keys:
                await store.client.delete(key)
        await store.close()
    return took


async def run(
    args: argparse.Namespace,
    pairs: list[tuple[str, str, str]],
    json_pairs: list[tuple[str, str, str]] | None = None,
) -> dict[str, float]:
    """One round: a fresh log learned by the service's learner, the bare loops after
    (and a log of the JSON form, when ``json_pairs`` is given)."""
    sample = pairs[: min(len(pairs), 20_000)]
    freeze = not args.no_freeze
    config = {**CONFIG, "kind": args.kind}
    bare, bare_cpu = bare_rate(sample, freeze, config)
    took = await learned_log(args, pairs, freeze, config)
    seconds, cpu_seconds = took["wall"], took["cpu"]
    json_figures = {}
    if json_pairs is not None:
        other = await learned_log(args, json_pairs, freeze, config)
        json_figures = {
            "json_service_learner_per_cpu_second": len(pairs) / other["cpu"],
            "json_recovery_seconds": other["wall"],
            "binary_vs_json_cpu": other["cpu"] / cpu_seconds,
        }
    again, again_cpu = bare_rate(sample, freeze, config)  # before and after: the better
    bare, bare_cpu = max(bare, again), max(bare_cpu, again_cpu)
    batch_cpu = bare_batch_rate(sample, freeze=freeze, config=config)
    with tempfile.TemporaryDirectory() as tmp:
        vw = vw_native_rate(pairs, Path(tmp))
    vw_figures = (
        {}
        if vw is None
        else {
            "vw_native_per_second": vw[0],
            "vw_native_per_cpu_second": vw[1],
            "service_vs_vw": len(pairs) / seconds / vw[0],
            "service_vs_vw_cpu": len(pairs) / cpu_seconds / vw[1],
            "learn_batch_vs_vw_cpu": batch_cpu / vw[1],
        }
    )
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
        # where the service's CPU goes (see the module's docstring)
        "loop_thread_us_per_entry": took["loop_cpu"] / len(pairs) * 1e6,
        "other_threads_us_per_entry": (cpu_seconds - took["loop_cpu"]) / len(pairs) * 1e6,
        "gc_us_per_entry": took["gc_cpu"] / len(pairs) * 1e6,
        **json_figures,
        **vw_figures,
    }


def medians(rounds: list[dict[str, float]]) -> dict[str, float]:
    """Each figure's median over the rounds."""
    return {key: statistics.median(r[key] for r in rounds) for key in rounds[0]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000)
    parser.add_argument("--store", choices=["sqlite", "redis"], default="sqlite")
    parser.add_argument("--redis-url", default="redis://127.0.0.1:6379/0")
    parser.add_argument(
        "--no-freeze", action="store_true",
        help="time with the benchmark's own data walked by the collector (see the docstring)",
    )  # fmt: skip
    parser.add_argument("--rounds", type=int, default=3, help="rounds; the medians are reported")
    parser.add_argument(
        "--kind", choices=["dgt", "boosted"], default="dgt", help="the model's family"
    )
    parser.add_argument(
        "--stored", choices=["binary", "json", "both"], default="binary",
        help="the stored decisions' form (see the docstring)",
    )  # fmt: skip
    args = parser.parse_args()
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    pairs = make_pairs(args.entries)
    json_pairs = as_json(pairs) if args.stored != "binary" else None
    if args.stored == "json":
        pairs, json_pairs = cast(list[tuple[str, str, str]], json_pairs), None
    if args.kind == "boosted":  # as a learner taking the model does (prepare_to_learn)
        preload_lightgbm().result()
    rounds = []
    for number in range(1, args.rounds + 1):
        one = asyncio.run(run(args, pairs, json_pairs))
        rounds.append(one)
        print(
            f"round {number}: ratio {one['ratio']:.2f}, cpu_ratio {one['cpu_ratio']:.2f}, "
            f"recovery {one['recovery_seconds']:.2f} s",
            flush=True,
        )
    figures = medians(rounds)
    print(f"kind {args.kind}, stored {args.stored}; medians of {len(rounds)} rounds:")
    for key, value in figures.items():
        print(f"{key:32s} {value:,.2f}")
    print(
        f"goals: ratio >= 0.9 {'met' if figures['ratio'] >= 0.9 else 'NOT met'}; "
        f">= 5,000/s {'met' if figures['service_learner_per_second'] >= 5000 else 'NOT met'}; "
        f"recovery < 5 s {'met' if figures['recovery_seconds'] < 5 else 'NOT met'}"
    )
    if "service_vs_vw" in figures:
        print(
            f"against Vowpal Wabbit ({VW_ARGUMENTS}, from a file): service learner "
            f"{figures['service_vs_vw']:.2f}x per wall second, "
            f"{figures['service_vs_vw_cpu']:.2f}x per CPU second (issue 43's goal: 2x)"
        )
    else:
        print("against Vowpal Wabbit: not measured (the optional vowpalwabbit is not installed)")


if __name__ == "__main__":
    main()
