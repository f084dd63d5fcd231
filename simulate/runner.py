"""One replay: a seeded shuffled stream over the train split; act, answer, learn.

The held-out test split is scored at a log-spaced set of round counts (the DGT
paper's figures 2-3 plot held-out accuracy / RMSE against the number of queries).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from banditree.learners import Decision, Feedback
from simulate.environments import Environment


class Agent(Protocol):
    """What the runner drives: any learner, the VW baseline, or a model behind HTTP."""

    def act(
        self, context: Sequence[float] | np.ndarray, event_id: str | None = None
    ) -> Decision: ...

    def learn(self, decision: Decision, feedback: Feedback) -> bool: ...

    def predict(self, contexts: np.ndarray) -> np.ndarray: ...


@dataclass
class SeedTrace:
    """Everything one learner did on one seed's stream.

    ``losses`` and ``hits`` are per round: the incurred loss, and 1/0 for a correct
    played action (classification) or the squared error of the played value
    (regression).  ``test_scores[k]`` is the held-out accuracy / RMSE after
    ``eval_rounds[k]`` rounds.
    """

    seed: int
    losses: np.ndarray
    hits: np.ndarray
    targets: np.ndarray
    eval_rounds: np.ndarray
    test_scores: np.ndarray
    seconds: float
    decisions: list[dict[str, Any]] = field(default_factory=list)


def stream_order(n_train: int, *, passes: int, rounds: int | None, seed: int) -> np.ndarray:
    """Row indices of the stream: ``passes`` seeded permutations, cut at ``rounds``."""
    if passes < 1:
        raise ValueError(f"passes must be >= 1, got {passes}")
    if rounds is not None and rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    rng = np.random.default_rng([seed, 0x5EED])
    if rounds is not None:
        passes = max(passes, -(-rounds // n_train))  # enough passes for the rounds
    order = np.concatenate([rng.permutation(n_train) for _ in range(passes)])
    return order if rounds is None else order[:rounds]


def evaluation_rounds(total_rounds: int, n_points: int) -> np.ndarray:
    """Log-spaced round counts from ``min(10, total)`` to ``total`` (always included)."""
    if n_points < 1:
        raise ValueError(f"eval points must be >= 1, got {n_points}")
    start = min(10, total_rounds)
    points = np.geomspace(start, total_rounds, num=n_points)
    return np.unique(np.concatenate([np.round(points).astype(np.int64), [total_rounds]]))


def test_score(task: str, predictions: np.ndarray, y_test: np.ndarray) -> float:
    """Held-out accuracy (classification) or RMSE (regression)."""
    if task == "classification":
        return float(np.mean(np.asarray(predictions).astype(np.int64) == y_test))
    return float(np.sqrt(np.mean((np.asarray(predictions, dtype=np.float64) - y_test) ** 2)))


def _hit(task: str, decision: Decision, target: float) -> float:
    if task == "classification":
        return float(decision.action == int(target))
    assert decision.value is not None
    return float((decision.value - target) ** 2)


def run_stream(
    agent: Agent,
    env: Environment,
    *,
    X: np.ndarray,
    y: np.ndarray,
    order: np.ndarray,
    eval_at: np.ndarray,
    X_test: np.ndarray,
    y_test: np.ndarray,
    seed: int,
    concurrency: int = 1,
    log_decisions: bool = False,
    on_rounds: Callable[[int], object] | None = None,
    targets: np.ndarray | None = None,
    test_targets: Callable[[int], np.ndarray] | None = None,
) -> SeedTrace:
    """Replay ``order`` through ``agent``; with ``concurrency > 1`` rounds between two
    evaluation points run on that many threads (for agents behind HTTP).

    ``targets`` (one per round) replaces ``y[order]`` as what round ``i`` is scored
    against, and ``test_targets(rounds_done)`` the held-out labels (a drifting map:
    :mod:`simulate.drift`)."""
    round_targets = np.asarray(y)[order] if targets is None else np.asarray(targets)
    n = len(order)
    losses, hits = np.zeros(n), np.zeros(n)
    scores = np.zeros(len(eval_at))
    logged: list[dict[str, Any] | None] = [None] * n if log_decisions else []

    def step(i: int) -> None:
        row = int(order[i])
        target = float(round_targets[i])
        decision = agent.act(X[row], event_id=f"s{seed}-r{i}")
        feedback = env.feedback(decision, target)
        losses[i] = env.incurred_loss(decision, target)
        hits[i] = _hit(env.task, decision, target)
        if log_decisions:
            logged[i] = {"round": i, "row": row, "decision": decision, "loss": losses[i]}
        agent.learn(decision, feedback)

    started = time.perf_counter()
    done = 0
    pool = ThreadPoolExecutor(max_workers=concurrency) if concurrency > 1 else None
    try:
        for k, stop in enumerate(eval_at):
            if pool is not None:
                list(pool.map(step, range(done, int(stop))))
            else:
                for i in range(done, int(stop)):
                    step(i)
            if on_rounds is not None:
                on_rounds(int(stop) - done)
            done = int(stop)
            held_out = y_test if test_targets is None else test_targets(done)
            scores[k] = test_score(env.task, agent.predict(X_test), held_out)
    finally:
        if pool is not None:
            pool.shutdown()
    seconds = time.perf_counter() - started
    return SeedTrace(
        seed=seed,
        losses=losses,
        hits=hits,
        targets=round_targets.astype(np.float64),
        eval_rounds=np.asarray(eval_at, dtype=np.int64),
        test_scores=scores,
        seconds=seconds,
        decisions=[d for d in logged if d is not None],
    )
