"""Vowpal Wabbit ``--cb_explore`` as a baseline learner on a numeric stream (benchmarks only)."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from banditree.explore import sample_action


def vw_line(row: Sequence[float]) -> str:
    """VW text features of one numeric context: ``| f0:x0 f1:x1 ...`` (zeros omitted).

    The names must not be bare integers: VW reads those as raw weight indices, which
    collide across the per-action weights of ``--cb_explore`` and stop it learning.
    """
    return "| " + " ".join([f"f{j}:{v!r}" for j, v in enumerate(row) if v != 0.0])


class VWBandit:
    """``vw --cb_explore K --epsilon eps`` driven one example at a time through pyvw.

    The caller's uniform numbers sample the action from VW's pmf, so VW and our
    learners can share the exploration randomness of a stream.
    """

    def __init__(
        self, n_actions: int, epsilon: float = 0.3, seed: int = 0, extra: str = ""
    ) -> None:
        import vowpalwabbit  # optional benchmark dependency (the ``bench`` extra)

        self.n_actions = n_actions
        self.vw = vowpalwabbit.Workspace(
            f"--cb_explore {n_actions} --epsilon {epsilon} --random_seed {seed} --quiet {extra}"
        )

    def act(self, features: str, u: float) -> tuple[int, float]:
        """``(action, propensity)`` for one context in VW text form."""
        pmf = np.asarray(self.vw.predict(features), dtype=np.float64)
        action = sample_action(pmf, u)
        return action, float(pmf[action] / pmf.sum())

    def learn(self, features: str, action: int, propensity: float, loss: float) -> None:
        self.vw.learn(f"{action + 1}:{loss!r}:{propensity!r} {features}")

    def greedy(self, features: str) -> int:
        """The action of largest probability (VW's exploit choice)."""
        return int(np.argmax(self.vw.predict(features)))

    def close(self) -> None:
        self.vw.finish()
