"""What the ``boosted`` kind costs: a served decision and learning from a log, refits included.

Usage::

    python -m benchmarks.speed.boosted_cost [--features 16] [--actions 10] [--entries 50000]
        [--options '{"window": 20000}']

The shape of ``benchmarks.scale.learner_keepup`` (16 features, 10 actions).  A synthetic
stream (reward 1 when the action matches a nonlinear label of the context) is logged
with uniform decisions; the learner then learns the ``--entries`` pairs in order (what a
service's learner does reading its log), refits on its schedule included: feedbacks
per wall second and per CPU second of the process (the fit worker's included), overall
and over the last half (the window full, refits at their steady pace), and the number
of fits.  LightGBM is imported before the clock starts, as a service's learner does
when it takes the model (``Learner.prepare_to_learn``).  Large windows are fitted on
the fit worker beside the learner (:mod:`banditree.learners.boosted.refits`): with a
second core free the wall rate is above the CPU rate.  ``batch_*``: a fresh learner
learns the same pairs through ``learn_batch``, 512 a call (the service's learner's
chunks, ``service.domain.runtime.learner_steps.MAX_CHUNK``), the same state as ``learn``
pair by pair.  Then the decision: CPU
microseconds per ``act`` of the fitted model (median of 5 passes of 2,000 contexts) by
the compiled kernel and by the numpy reference, against the default learner's ``act``
in the same run.  Goals (issue 44): a decision under 50 us, 5,000 feedbacks per second.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from typing import Any

import numpy as np

from banditree.learners import Decision, Feedback, Learner, build_learner
from banditree.learners.boosted import BoostedBandit
from banditree.learners.boosted.refits import preload_lightgbm

#: pairs per ``learn_batch`` call (the service learner's chunk)
BATCH = 512


def logged_pairs(n: int, d: int, k: int, seed: int = 0) -> list[tuple[Decision, Feedback]]:
    """``n`` uniform decisions of a nonlinear task and their 0/1 losses."""
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, d))
    labels = ((x[:, 0] * x[:, 1] > 0).astype(int) * 2 + (x[:, 2] > 0.5)) % k
    actions = rng.integers(0, k, size=n)
    return [
        (
            Decision.of_action(f"e{i}", tuple(x[i].tolist()), 0, int(a), 1.0 / k, int(a), None, {}),
            Feedback(loss=float(a != label)),
        )
        for i, (a, label) in enumerate(zip(actions.tolist(), labels.tolist(), strict=True))
    ]


def act_us(learner: Learner, contexts: np.ndarray, passes: int = 5) -> float:
    """Median CPU microseconds of one ``act`` over ``passes`` passes."""
    times = []
    for _ in range(passes):
        start = time.process_time()
        for row in contexts:
            learner.act(row)
        times.append((time.process_time() - start) / len(contexts) * 1e6)
    return statistics.median(times)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--features", type=int, default=16)
    parser.add_argument("--actions", type=int, default=10)
    parser.add_argument("--entries", type=int, default=50_000)
    parser.add_argument("--options", default="{}", help="the boosted kind's options (JSON)")
    args = parser.parse_args(argv)
    d, k = args.features, args.actions
    options: dict[str, Any] = json.loads(args.options)
    pairs = logged_pairs(args.entries, d, k)
    learner = build_learner(
        {"kind": "boosted", "n_features": d, "n_actions": k, "options": options}
    )
    learner.prepare_to_learn()
    preload_lightgbm().result()
    half = len(pairs) // 2
    start, wall_start = time.process_time(), time.perf_counter()
    for decision, feedback in pairs[:half]:
        learner.learn(decision, feedback)
    middle, wall_middle = time.process_time(), time.perf_counter()
    for decision, feedback in pairs[half:]:
        learner.learn(decision, feedback)
    end, wall_end = time.process_time(), time.perf_counter()
    batched = build_learner(
        {"kind": "boosted", "n_features": d, "n_actions": k, "options": options}
    )
    batched.prepare_to_learn()
    decisions, feedbacks = [p[0] for p in pairs], [p[1] for p in pairs]
    batch_start, batch_wall = time.process_time(), time.perf_counter()
    for i in range(0, len(pairs), BATCH):
        batched.learn_batch(decisions[i : i + BATCH], feedbacks[i : i + BATCH])
    batch_end, batch_wall_end = time.process_time(), time.perf_counter()
    contexts = np.random.default_rng(1).normal(size=(2000, d))
    default = build_learner({"n_features": d, "n_actions": k})
    for decision, feedback in pairs[:2000]:
        default.learn(decision, feedback)
    result: dict[str, Any] = {
        "features": d,
        "actions": k,
        "entries": len(pairs),
        "options": options,
        "fits": getattr(learner, "fits", None),
        "feedbacks_per_second": len(pairs) / (wall_end - wall_start),
        "last_half_feedbacks_per_second": (len(pairs) - half) / (wall_end - wall_middle),
        "feedbacks_per_cpu_second": len(pairs) / (end - start),
        "last_half_feedbacks_per_cpu_second": (len(pairs) - half) / (end - middle),
        "batch_feedbacks_per_second": len(pairs) / (batch_wall_end - batch_wall),
        "batch_feedbacks_per_cpu_second": len(pairs) / (batch_end - batch_start),
        "boosted_act_us": act_us(learner, contexts),
        "default_act_us": act_us(default, contexts),
    }
    if isinstance(learner, BoostedBandit) and learner._kernel is not None:
        learner._kernel = None  # the numpy reference, the same state
        result["boosted_reference_act_us"] = act_us(learner, contexts)
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
