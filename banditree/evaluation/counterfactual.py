"""Counterfactual evaluation of candidate configurations on an interaction log.

For every candidate configuration the log is replayed in offset order:

* **off-policy value** - the candidate learns from the first ``train_fraction`` of the
  log (its own importance-weighted estimator divides by the logged propensity); on the
  rest, its action probabilities (exploration included: the policy as it would be
  deployed) give IPS, SNIPS and DR estimates (``banditree.ope``; DR's reward model is a
  logistic regression fitted on the training part), each with a bootstrap interval;
* **progressive value** - the candidate learning on the whole log as it arrives.  With
  uniform logging and enough rows this is rejection-sampling replay (a row counts, and
  is learned from as the candidate's own decision, with probability
  ``pi(a | x) p_min / p``); otherwise every row counts with weight ``pi_t(a | x) / p``
  (``pi_t``: the candidate's probabilities at the model version that decided the row
  live, see :class:`ServedVersions`), normalised by the summed weights.

A claim needs support: when the evaluation rows give the candidate fewer than
``min_effective_rounds`` effective rounds (``(sum w)^2 / sum w^2``), or one round
carries more than ``max_weight_share`` of the summed weight (a propensity near zero),
the estimates are withheld (null) and the report says why.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.evaluation.support import SupportRules, event_notes, support
from banditree.learners import (
    Decision,
    Feedback,
    InvalidInput,
    Learner,
    build_learner,
    restore_learner,
)
from banditree.logs import LogTable
from banditree.ope import (
    DoublyRobust,
    InverseProbabilityWeighting,
    SelfNormalizedInverseProbabilityWeighting,
    check_logged_rounds,
)

__all__ = ["ReplayTrace", "ServedVersions", "SupportRules", "replay", "score_candidate", "support"]


@runtime_checkable
class _HasActionProbabilities(Protocol):
    def action_probabilities(self, context: FloatArray) -> FloatArray: ...


@dataclass
class ReplayTrace:
    """One candidate's pass over the log."""

    logged_probability: FloatArray  # pi_t(a_t | x_t) before learning row t, (n,)
    evaluation_dist: FloatArray  # frozen head-trained policy on the evaluation rows, (m, K)
    accepted: np.ndarray | None = None  # rejection replay: rows counted, (n,) bool
    seconds: float = 0.0
    notes: list[str] = field(default_factory=list)
    features: dict[str, Any] | None = None  # the schema a candidate with features used


def probabilities(learner: Learner, context: FloatArray) -> FloatArray:
    """The candidate's probability of each action for ``context``."""
    if not isinstance(learner, _HasActionProbabilities):
        raise ValueError(
            f"{type(learner).__name__} does not expose action probabilities; "
            "evaluate needs a classification learner"
        )
    return np.asarray(learner.action_probabilities(context), dtype=np.float64)


def _learn(learner: Learner, table: LogTable, t: int, propensity: float) -> None:
    decision = Decision(
        event_id=f"log-{int(table.offset[t])}",
        context=table.objects[t] if table.objects is not None else tuple(table.context[t].tolist()),
        model_version=learner.version,
        action=int(table.action[t]),
        propensity=propensity,
    )
    try:
        learner.learn(decision, Feedback(loss=float(table.loss[t])))
    except (InvalidInput, ValueError) as err:
        raise ValueError(f"log row at offset {int(table.offset[t])}: {err}") from None


class ServedVersions:
    """The candidate as it was at each model version that decided a later log row.

    The service decides from snapshots (``model_version`` in each row) that trail the
    learner by up to a checkpoint interval; a candidate replayed with the same config
    therefore decides row ``t`` with its own state at that version, not with every
    earlier row already learned, or its probabilities would differ from the logged ones
    (weights far from 1: the live progressive value would not be reproduced).  Copies
    are kept only for versions that a later row names, and dropped after their last row.
    """

    def __init__(self, versions: np.ndarray) -> None:
        self._last_row: dict[int, int] = {int(v): t for t, v in enumerate(versions.tolist())}
        self._copies: dict[int, Learner] = {}

    def keep(self, learner: Learner, t: int) -> None:
        """After row ``t`` (``-1``: before the first): copy ``learner`` if a later row
        names its version, and drop the copies no later row names."""
        version = learner.version
        if self._last_row.get(version, -1) > t and version not in self._copies:
            self._copies[version] = restore_learner(*learner.state())
        for old in [v for v in self._copies if self._last_row[v] <= t]:
            del self._copies[old]

    def at(self, version: int, learner: Learner) -> Learner:
        """The candidate at ``version``; ``learner`` itself when it is there, or when the
        candidate never passed that version (another config counts updates differently)."""
        if version == learner.version:
            return learner
        return self._copies.get(version, learner)


def replay(
    table: LogTable,
    config: dict[str, Any],
    cut: int,
    *,
    rejection: bool,
    seed: int = 0,
    on_row: Any = None,
) -> ReplayTrace:
    """Replay the log through a fresh learner of ``config`` (see the module docstring)."""
    started = time.perf_counter()
    learner = build_learner(config)
    n = table.n_rows
    logged_probability = np.empty(n)
    frozen: Learner | None = None
    rng = np.random.default_rng([seed, 0xE7A1])
    p_min = float(table.propensity.min())
    accepted = np.zeros(n, dtype=bool) if rejection else None
    progressive = build_learner(config) if rejection else None
    served = ServedVersions(table.model_version)
    served.keep(learner, -1)
    for t in range(n):
        if t == cut:
            frozen = restore_learner(*learner.state())
        pmf = probabilities(served.at(int(table.model_version[t]), learner), table.context_at(t))
        a, p = int(table.action[t]), float(table.propensity[t])
        if a >= pmf.shape[0]:
            raise ValueError(
                f"log row at offset {int(table.offset[t])}: action {a} is outside the "
                f"candidate's {pmf.shape[0]} actions"
            )
        logged_probability[t] = pmf[a]
        _learn(learner, table, t, p)
        served.keep(learner, t)
        if progressive is not None and accepted is not None:
            pi = probabilities(progressive, table.context_at(t))[a]
            if rng.random() < pi * p_min / p:
                accepted[t] = True
                _learn(progressive, table, t, max(float(pi), 1e-12))
        if on_row is not None:
            on_row(1)
    assert frozen is not None
    evaluation_dist = np.stack([probabilities(frozen, table.context_at(t)) for t in range(cut, n)])
    return ReplayTrace(
        logged_probability=logged_probability,
        evaluation_dist=evaluation_dist,
        accepted=accepted,
        seconds=time.perf_counter() - started,
        features=_schema_json(learner),
    )


def _schema_json(learner: Learner) -> dict[str, Any] | None:
    """The feature schema of a learner with named features (declared or inferred)."""
    schema = getattr(learner, "schema", None)
    return None if schema is None else dict(schema.to_json())


def bootstrap_ratio(
    numerator: FloatArray, denominator: FloatArray, *, n_bootstrap: int, seed: int
) -> tuple[float, list[float]]:
    """``sum(numerator) / sum(denominator)`` and its percentile bootstrap 95% interval."""
    value = float(numerator.sum() / denominator.sum()) if denominator.sum() > 0 else float("nan")
    rng = np.random.default_rng(seed)
    n = numerator.shape[0]
    values = np.empty(n_bootstrap)
    for b in range(n_bootstrap):
        rows = rng.integers(0, n, n)
        total = denominator[rows].sum()
        values[b] = numerator[rows].sum() / total if total > 0 else np.nan
    low, high = np.nanquantile(values, [0.025, 0.975])
    return value, [float(low), float(high)]


def score_candidate(
    table: LogTable,
    trace: ReplayTrace,
    cut: int,
    estimated_rewards: FloatArray,
    *,
    rules: SupportRules,
    n_bootstrap: int,
    seed: int = 0,
) -> dict[str, Any]:
    """The report entry of one candidate (values on the reward scale ``1 - loss``)."""
    reward = table.reward()
    ev = slice(cut, table.n_rows)
    rounds = check_logged_rounds(
        reward=reward[ev],
        action=table.action[ev],
        propensity=table.propensity[ev],
        action_dist=trace.evaluation_dist,
        estimated_rewards=estimated_rewards,
    )
    weights = rounds.importance_weights()
    effective, share, reasons = support(weights, rules, reward[ev])
    out: dict[str, Any] = {
        "matched_rounds": int(np.sum(trace.evaluation_dist.argmax(axis=1) == table.action[ev])),
        "effective_rounds": effective,
        "max_weight_share": share,
        "supported": not reasons,
        "refusals": reasons,
        **event_notes(weights, reward[ev], rules),
    }
    for estimator in (
        InverseProbabilityWeighting(),
        SelfNormalizedInverseProbabilityWeighting(),
        DoublyRobust(),
    ):
        name = estimator.name
        if reasons:
            out[name], out[f"{name}_ci95"] = None, None
            continue
        s = estimator.summary(rounds, n_bootstrap=n_bootstrap, seed=seed)
        out[name], out[f"{name}_ci95"] = s["value"], s["value_ci95"]
    out.update(_progressive(table, trace, rules=rules, n_bootstrap=n_bootstrap, seed=seed))
    out["seconds"] = trace.seconds
    return out


def _progressive(
    table: LogTable, trace: ReplayTrace, *, rules: SupportRules, n_bootstrap: int, seed: int
) -> dict[str, Any]:
    reward = table.reward()
    if trace.accepted is not None:
        rows = np.flatnonzero(trace.accepted)
        counted = reward[rows]
        numerator, weights = counted, np.ones(len(rows))
        method = "rejection_sampling"
    else:
        counted = reward
        weights = trace.logged_probability / table.propensity
        numerator = weights * reward
        method = "importance_weighted"
    effective, _, reasons = (
        support(weights, rules, counted) if len(weights) else (0.0, 1.0, ["no rows"])
    )
    out: dict[str, Any] = {
        "progressive_method": method,
        "progressive_rounds": effective,
        "progressive_refusals": reasons,
    }
    if reasons:
        out["progressive_value"], out["progressive_value_ci95"] = None, None
        return out
    value, ci = bootstrap_ratio(numerator, weights, n_bootstrap=n_bootstrap, seed=seed)
    out["progressive_value"], out["progressive_value_ci95"] = value, ci
    cumulative = np.cumsum(numerator) / np.maximum(np.cumsum(weights), 1e-12)
    out["progressive_curve"] = _thin_curve(cumulative)
    return out


def _thin_curve(values: FloatArray, points: int = 60) -> list[list[float]]:
    """``[[rows, value], ...]`` at log-spaced row counts (for the plot)."""
    n = values.shape[0]
    at = np.unique(np.geomspace(1, n, num=min(points, n)).astype(np.int64))
    return [[int(k), float(values[k - 1])] for k in at]
