"""The compiled kernel against the numpy reference, in one process, rounds alternated.

One command::

    python -m benchmarks.speed.kernel_speed [--entries 20000] [--rounds 5] [--ticks 200] [--only NAME]

For each config (the default classification model of ``benchmarks.learner_keepup``,
DGT h=6 with 16 features and 10 actions; a sigmoid-link epsilon-greedy tree; the default
regression forest; a TEL and a hinge forest of 10 trees of depth 6 on 16 features and
10 actions, whose ticks the kernel decides and whose learning stays numpy's) two learners are built from it, one switched to the reference
(:func:`~banditree.learners.gradient_bandit.kernel_calls.use_reference`, what
``BANDITREE_KERNEL=reference`` does to every learner), and each round times, for both
in turn:

* **a tick**: ``act_columns`` of 1, 16 and 256 contexts (``--ticks`` calls each), the
  microseconds of CPU a tick;
* **a learned entry**: ``learn_batch`` over ``--entries`` decided pairs in chunks of 512
  (the service learner's chunk) from a fresh learner, the microseconds of CPU an entry;
* **act + learn**: the library's one-example API (``act``, then ``learn`` with the
  feedback), as ``benchmarks.bandit_throughput`` drives it, rounds per CPU second.

The figures are the rounds' medians of this process's CPU time (``time.process_time``:
less moved than the wall clock by the other work on a shared machine), and the ratio
is reference / native within the same run.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable
from typing import Any

import numpy as np

from banditree.learners import Feedback, build_learner
from banditree.learners.gradient_bandit import GradientBandit
from banditree.learners.gradient_bandit.kernel_calls import use_reference

CONFIGS: dict[str, dict[str, Any]] = {
    "default (dgt h6, 16 features, 10 actions)": {
        "kind": "dgt", "height": 6, "n_features": 16, "n_actions": 10, "seed": 0,
    },
    "sigmoid epsilon-greedy (dgt h6, 16 x 10)": {
        "kind": "dgt", "height": 6, "n_features": 16, "n_actions": 10, "seed": 0,
        "reward_link": "sigmoid", "explorer": "epsilon_greedy",
    },
    "regression default (forest 4 x h8, 16 features)": {
        "task": "regression", "n_features": 16, "seed": 0,
    },
    "tel (10 trees of depth 6, 16 x 10)": {
        "kind": "tel", "height": 6, "n_trees": 10, "n_features": 16, "n_actions": 10, "seed": 0,
    },
    "hinge (10 trees of depth 6, 16 x 10)": {
        "kind": "hinge", "height": 6, "n_trees": 10, "n_features": 16, "n_actions": 10, "seed": 0,
    },
}  # fmt: skip
TICKS = (1, 16, 256)
CHUNK = 512


def learner(config: dict[str, Any], native: bool) -> GradientBandit:
    out = build_learner(config)
    assert isinstance(out, GradientBandit)
    if not native:
        use_reference(out)
    return out


def losses_for(columns: Any, rng: np.random.Generator, task: str) -> list[Feedback]:
    if task == "classification":
        labels = rng.integers(10, size=len(columns.event_ids))
        return [Feedback(loss=float(a != y)) for a, y in zip(columns.action, labels, strict=True)]
    return [Feedback(loss=abs(v - 1.0)) for v in columns.value]


def cpu(fn: Callable[[], object]) -> float:
    start = time.process_time()
    fn()
    return time.process_time() - start


def tick_seconds(model: GradientBandit, x: np.ndarray, ids: list[str], ticks: int) -> float:
    def run() -> None:
        for _ in range(ticks):
            model.act_columns(x, ids)

    return cpu(run) / ticks


def entry_seconds(config: dict[str, Any], native: bool, pairs: tuple[list, list]) -> float:
    model = learner(config, native)
    decisions, feedbacks = pairs

    def run() -> None:
        for at in range(0, len(decisions), CHUNK):
            model.learn_batch(decisions[at : at + CHUNK], feedbacks[at : at + CHUNK])

    return cpu(run) / len(decisions)


def act_learn_rate(config: dict[str, Any], native: bool, x: np.ndarray, task: str) -> float:
    model = learner(config, native)
    rng = np.random.default_rng(5)
    labels = rng.integers(10, size=len(x)).tolist()

    def run() -> None:
        for row, label in zip(x, labels, strict=True):
            decision = model.act(row)
            if task == "classification":
                model.learn(decision, Feedback(loss=float(decision.action != label)))
            else:
                assert decision.value is not None
                model.learn(decision, Feedback(loss=abs(decision.value - 1.0)))

    return len(x) / cpu(run)


def measure(name: str, config: dict[str, Any], args: argparse.Namespace) -> None:
    rng = np.random.default_rng(0)
    task = config.get("task", "classification")
    d = config["n_features"]
    maker = learner(config, native=False)
    x = rng.normal(size=(args.entries, d))
    columns = maker.act_columns(x, [f"e{i:08d}" for i in range(args.entries)])
    pairs = (columns.rows(), losses_for(columns, rng, task))
    # the tick learners learned a little first (a model that knows something)
    servers = {flag: learner(config, flag) for flag in (True, False)}
    for model in servers.values():
        model.learn_batch(pairs[0][:2000], pairs[1][:2000])
    figures: dict[str, dict[bool, list[float]]] = {}
    for _ in range(args.rounds):
        for native in (True, False):
            model = servers[native]
            for b in TICKS:
                key = f"tick of {b} (us)"
                seconds = tick_seconds(model, x[:b], [f"t{i}" for i in range(b)], args.ticks)
                figures.setdefault(key, {True: [], False: []})[native].append(seconds * 1e6)
            seconds = entry_seconds(config, native, pairs)
            figures.setdefault("learned entry (us)", {True: [], False: []})[native].append(
                seconds * 1e6
            )
            rate = act_learn_rate(config, native, x[:3000], task)
            figures.setdefault("act + learn (/s)", {True: [], False: []})[native].append(rate)
    print(f"\n{name}: {args.rounds} rounds, medians of CPU time")
    print("| figure | native | reference | reference / native |")
    print("|---|---|---|---|")
    for key, by in figures.items():
        native, reference = statistics.median(by[True]), statistics.median(by[False])
        ratio = native / reference if key.endswith("(/s)") else reference / native
        print(f"| {key} | {native:,.1f} | {reference:,.1f} | {ratio:.2f}x |")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=20_000, help="pairs learned a round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds, paths alternated")
    parser.add_argument("--ticks", type=int, default=200, help="act_columns calls a size")
    parser.add_argument(
        "--only", action="append", help="run the configs whose name has this (repeatable)"
    )
    args = parser.parse_args(argv)
    for name, config in CONFIGS.items():
        if args.only is None or any(part in name for part in args.only):
            measure(name, config, args)


if __name__ == "__main__":
    main()
