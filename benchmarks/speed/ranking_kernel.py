"""The ranking model's decision on the compiled kernel against the numpy reference, in process.

One command::

    python -m benchmarks.speed.ranking_kernel [--data pendigits] [--rounds 3000] [--seeds 2] [--repeats 20]

Two ranking models per seed (``{"task": "ranking"}``), one switched to the numpy reference
(``RankingModel.use_reference``, what ``BANDITREE_KERNEL=reference`` runs), play the same
ranking stream (``simulate.ranking_streams``: a classification set's rounds, 10
candidates, the stream's sampling uniforms) as ``banditree simulate --task ranking`` does.
Printed:

* **the same decisions**: rounds whose played or greedy candidate differ (goal 0), the
  largest difference of a probability (goal <= 1e-12), and both progressive losses (goal:
  equal to the last digit);
* **the cost of a rank**: CPU microseconds of ``rank`` of 10 cached candidates (the
  benchmark HTTP body of ``benchmarks.speed.ranking_http``) on each path, rounds of each
  alternated, the median over rounds, and their ratio.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time
from typing import Any

import numpy as np

import banditree.ranking  # noqa: F401  (registers the ranking task)
from banditree.core import Feedback
from banditree.learners import build_learner
from banditree.ranking import RankingModel
from benchmarks.speed.ranking_http import _request
from simulate.ranking import _Model
from simulate.ranking_streams import build_stream, play


def same_decisions(data: str, rounds: int, seeds: int) -> dict[str, Any]:
    """Both paths over the same streams: differing decisions, the largest probability
    difference, the progressive losses."""
    differ, worst, losses = 0, 0.0, []
    for seed in range(seeds):
        stream = build_stream(data, seed, rounds, 10)
        runs = []
        for reference in (False, True):
            player = _Model({"task": "ranking"}, seed)
            if reference:
                player.model.use_reference()
            log: list[tuple[Any, Any, list[float]]] = []

            def act(c: Any, f: Any, ids: Any, u: float, p: _Model = player, out: Any = log) -> Any:
                chosen, d = p.act(c, f, ids, u)
                assert d.ranking is not None
                out.append((d.action, d.greedy_action, d.ranking["probabilities"]))
                return chosen, d

            runs.append((play(stream, act, player)["losses"], log))
        (native_losses, native_log), (reference_losses, reference_log) = runs
        losses.append((float(native_losses.mean()), float(reference_losses.mean())))
        for a, b in zip(native_log, reference_log, strict=True):
            differ += a[:2] != b[:2]
            worst = max(worst, float(np.max(np.abs(np.subtract(a[2], b[2])))))
    return {"differing_decisions": differ, "largest_probability_difference": worst,
            "progressive_losses": losses}  # fmt: skip


def rank_cost(repeats: int, per_round: int = 1000) -> dict[str, float]:
    """CPU microseconds of a rank of 10 cached candidates on each path (medians)."""
    rng = random.Random(0)
    models = {}
    for path in ("native", "reference"):
        model = build_learner({"task": "ranking"})
        assert isinstance(model, RankingModel)
        if path == "reference":
            model.use_reference()
        models[path] = model
    for t in range(300):  # the schemas inferred, past the first rounds: the same states
        body = _request(rng, 10)
        actions = [(a["id"], a["features"]) for a in body["actions"]]
        d = models["reference"].rank(body["context"], actions, f"w{t}")
        loss = float(rng.random() < 0.5)
        for model in models.values():
            model.learn(d, Feedback(loss=loss))
    body = _request(rng, 10)
    context, actions = body["context"], [(a["id"], a["features"]) for a in body["actions"]]
    times: dict[str, list[float]] = {path: [] for path in models}
    for _ in range(repeats):
        for path, model in models.items():
            started = time.thread_time()
            for i in range(per_round):
                model.rank(context, actions, f"e{i}")
            times[path].append((time.thread_time() - started) / per_round * 1e6)
    out = {f"{path}_us": statistics.median(t) for path, t in times.items()}
    out["reference_over_native"] = out["reference_us"] / out["native_us"]
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", default="pendigits", help="a bundled classification set")
    parser.add_argument("--rounds", type=int, default=3000)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=20, help="alternated timing rounds")
    args = parser.parse_args()
    same = same_decisions(args.data, args.rounds, args.seeds)
    losses = ", ".join(f"{a!r} / {b!r}" for a, b in same["progressive_losses"])
    print(
        f"{args.seeds} x {args.rounds} rounds of {args.data}: decisions differing "
        f"{same['differing_decisions']} (goal 0); largest probability difference "
        f"{same['largest_probability_difference']:.3g} (goal <= 1e-12); progressive loss "
        f"native / reference per seed: {losses}"
    )
    cost = rank_cost(args.repeats)
    print(
        f"rank of 10 cached candidates, CPU us (median of {args.repeats} alternated rounds): "
        f"native {cost['native_us']:.2f}, reference {cost['reference_us']:.2f}, "
        f"reference / native {cost['reference_over_native']:.2f}x"
    )


if __name__ == "__main__":
    main()
