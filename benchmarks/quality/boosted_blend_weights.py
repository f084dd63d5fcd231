"""What the boosted kind's blend weight reads, against what every action's reward says.

Usage::

    python -m benchmarks.quality.boosted_blend_weights [--datasets ...] [--seed 0]
        [--max-rounds 3000] [--learner '{"blend_score": "stacked"}']

The bandit scores the online tree and the ensemble on the played action only.  A
classification stream knows every action's reward, so here, on every round the blend
decides (the same streams as :mod:`benchmarks.quality.boosted_bandit`), both models'
predicted rewards of every action are read before either learns the round, and per
set the run prints:

* ``greedy played``: the share of rounds that played the blend's greedy action;
* ``w used``: the ensemble's mean weight in the blend over those rounds;
* ``w stacked``: the least-squares weight of the played actions' errors (the
  ``stacked`` score), ``w ips``: the same with each round weighted by 1 / propensity,
  ``w all``: the same over every action's error (full information), each at the end;
* ``best w (MSE, all actions)``: of the fixed weights 0, 0.1, ..., 1, the one of least
  squared error over every action's reward;
* ``best w (greedy error)``: the one whose blend's greedy action is wrong least often;
* ``greedy error``: that least error, against the weights the learner used.

The models are the ones the learner's own decisions trained, so a fixed weight's
greedy error is what the blend would have done on the contexts seen, not a run with
that weight.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

import numpy as np

from banditree.datasets import load
from banditree.learners import Feedback, build_learner
from banditree.learners.boosted import BoostedBandit
from benchmarks.quality.bandit_vs_vw import stream
from benchmarks.quality.protocol import TUNING

GRID = np.linspace(0.0, 1.0, 11)
HALFLIFE = 500.0


class _Sums:
    """Decayed sums of both models' squared errors and their cross term."""

    def __init__(self) -> None:
        self.decay = 0.5 ** (1.0 / HALFLIFE)
        self.online = self.ensemble = self.cross = 0.0

    def add(self, e_online: np.ndarray, e_ensemble: np.ndarray, weight: float = 1.0) -> None:
        d = self.decay
        self.online = d * self.online + weight * float(e_online @ e_online)
        self.ensemble = d * self.ensemble + weight * float(e_ensemble @ e_ensemble)
        self.cross = d * self.cross + weight * float(e_online @ e_ensemble)

    def weight(self) -> float:
        spread = self.online + self.ensemble - 2.0 * self.cross
        if spread <= 1e-12:
            return 0.5
        return min(max((self.online - self.cross) / spread, 0.0), 1.0)


def run(name: str, seed: int, max_rounds: int, options: dict[str, Any]) -> dict[str, Any]:
    """One pass of the boosted kind on one set, read as the module's docstring says."""
    ds = load(name)
    x, y, _ = stream(ds, seed, max_rounds)
    learner = build_learner(
        {
            "n_features": ds.n_features,
            "n_actions": ds.n_classes,
            "kind": "boosted",
            "options": options,
            "seed": seed,
        }
    )
    assert isinstance(learner, BoostedBandit)
    played, ips, full = _Sums(), _Sums(), _Sums()
    squared, wrong = np.zeros(GRID.size), np.zeros(GRID.size)
    used, used_wrong, greedy, rounds = 0.0, 0, 0, 0
    for row, label in zip(x, y.tolist(), strict=True):
        decision = learner.act(row)
        ensemble = learner._ensemble
        if learner.ensemble_decides and ensemble is not None and learner._starter is not None:
            online = learner._starter.reward_estimates(row)  # type: ignore[attr-defined]
            own = ensemble.action_scores(row)[0]
            reward = np.zeros(ds.n_classes)
            reward[label] = 1.0
            e_online, e_own = online - reward, own - reward
            a = int(decision.action or 0)
            played.add(e_online[a : a + 1], e_own[a : a + 1])
            ips.add(e_online[a : a + 1], e_own[a : a + 1], 1.0 / decision.propensity)
            full.add(e_online, e_own)
            mixed = GRID[:, None] * own + (1.0 - GRID[:, None]) * online
            squared += np.mean((mixed - reward) ** 2, axis=1)
            wrong += np.argmax(mixed, axis=1) != label
            e_tree, e_ensemble = learner._blend_errors()
            w = e_tree / (e_tree + e_ensemble)
            used += w
            used_wrong += int(np.argmax(w * own + (1.0 - w) * online) != label)
            greedy += int(a == decision.greedy_action)
            rounds += 1
        learner.learn(decision, Feedback(loss=float(decision.action != label)))
    n = max(rounds, 1)
    return {
        "dataset": name,
        "rounds": rounds,
        "greedy_played": greedy / n,
        "w_used": used / n,
        "w_stacked": played.weight(),
        "w_ips": ips.weight(),
        "w_all": full.weight(),
        "best_w_mse": float(GRID[np.argmin(squared)]),
        "best_w_greedy": float(GRID[np.argmin(wrong)]),
        "best_greedy_error": float(wrong.min() / n),
        "used_greedy_error": used_wrong / n,
        "greedy_error_by_w": (wrong / n).tolist(),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=list(TUNING))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-rounds", type=int, default=3000)
    parser.add_argument("--learner", default="{}", help="the kind's options (JSON object)")
    args = parser.parse_args(argv)
    options = json.loads(args.learner)
    print(
        "| data | rounds | greedy played | w used | w stacked | w ips | w all | "
        "best w (MSE, all actions) | best w (greedy error) | greedy error: best w / used |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for name in args.datasets:
        r = run(name, args.seed, args.max_rounds, options)
        print(
            f"| {name} | {r['rounds']} | {r['greedy_played']:.3f} | {r['w_used']:.2f} | "
            f"{r['w_stacked']:.2f} | {r['w_ips']:.2f} | {r['w_all']:.2f} | "
            f"{r['best_w_mse']:.1f} | {r['best_w_greedy']:.1f} | "
            f"{r['best_greedy_error']:.4f} / {r['used_greedy_error']:.4f} |"
        )


if __name__ == "__main__":
    main()
