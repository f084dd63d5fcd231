"""Off-policy evaluation of a ranking configuration on a logged ranking log.

The log's rows (wire form with a ``ranking`` candidate set, e.g. from
:func:`banditree.logs.dsjson.read_dsjson`) are split in time: a fresh model of the
candidate configuration learns from the first ``train_fraction`` of them (the logged
candidate's reward, as the service learns), then, frozen, gives its probability of every
candidate of each later row.  IPS, SNIPS and DR (with the candidate's own predicted
rewards, clipped to the range of the rewards it learned from, as the reward model) estimate its value on those rows; candidate sets of
different sizes are padded with candidates of probability 0.  Rows of deferred events
never activated (``_skipLearn``) are left out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

from banditree.core import Decision, Feedback
from banditree.learners import LearnerConfig, build_learner
from banditree.ope import (
    DoublyRobust,
    InverseProbabilityWeighting,
    SelfNormalizedInverseProbabilityWeighting,
    check_logged_rounds,
)
from banditree.ranking.model import RankingModel


def decision_of_row(row: Mapping[str, Any]) -> Decision:
    """The ranking decision a wire-form log row records."""
    ranking = row.get("ranking")
    if not isinstance(ranking, Mapping):
        raise ValueError(f"row offset {row.get('offset')}: not a ranking row (no candidate set)")
    action = int(row["action"])
    return Decision(
        event_id=str(row["event_id"]), context=(), model_version=int(row.get("model_version", 0)),
        action=action, propensity=float(row["propensity"]),
        greedy_action=int(row.get("greedy_action") or action), ranking=dict(ranking),
    )  # fmt: skip


def _summary(log: Any, n_bootstrap: int, seed: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for estimator in (
        InverseProbabilityWeighting(),
        SelfNormalizedInverseProbabilityWeighting(),
        DoublyRobust(),
    ):
        out[estimator.name] = estimator.summary(log, n_bootstrap=n_bootstrap, seed=seed)
    return out


def evaluate_ranking(
    rows: Iterable[Mapping[str, Any]],
    config: Mapping[str, Any],
    *,
    train_fraction: float = 0.7,
    n_bootstrap: int = 500,
    seed: int = 0,
    keep_reward_model: bool = False,
) -> dict[str, Any]:
    """Train ``config`` on the first part of ``rows``; IPS / SNIPS / DR of its policy (its
    exploration probabilities) and of its greedy choice on the rest, beside the logged
    policy's value.  Rewards are ``1 - loss``.  ``keep_reward_model``: the answer's
    ``reward_model`` holds the predicted reward of every candidate of every evaluated row
    ``(n, width)``, for estimating other policies with the same DR."""
    if not 0 < train_fraction < 1:
        raise ValueError(f"train_fraction must be in (0, 1), got {train_fraction}")
    kept = [r for r in rows if (r.get("ranking") or {}).get("active", True) is not False]
    cut = round(len(kept) * train_fraction)
    if cut < 1 or cut >= len(kept):
        raise ValueError(f"{len(kept)} learnable rows are too few to split at {train_fraction}")
    settings = LearnerConfig.model_validate({**config, "task": "ranking"})
    model = build_learner(settings)
    assert isinstance(model, RankingModel)
    for row in kept[:cut]:
        model.learn(decision_of_row(row), Feedback(loss=float(row["loss"])))
    seen = [1.0 - float(row["loss"]) for row in kept[:cut]]
    low_reward, high_reward = min(seen), max(seen)
    test = kept[cut:]
    width = max(len(r["ranking"]["ids"]) for r in test)
    n = len(test)
    policy, greedy, scores = np.zeros((n, width)), np.zeros((n, width)), np.zeros((n, width))
    for i, row in enumerate(test):
        ranking = row["ranking"]
        actions = list(zip(ranking["ids"], ranking["features"], strict=True))
        d = model.rank(ranking["context"], actions, f"eval-{row['event_id']}")
        assert d.ranking is not None
        k = len(actions)
        policy[i, :k] = d.ranking["probabilities"]
        s = model.scores(ranking["context"], ranking["features"])
        # the reward model of DR: the predictions, within the rewards seen in training
        scores[i, :k] = np.clip(s, low_reward, high_reward)
        greedy[i, int(np.argmax(s))] = 1.0
    reward = np.array([1.0 - float(r["loss"]) for r in test])
    action = np.array([int(r["action"]) for r in test])
    propensity = np.array([float(r["propensity"]) for r in test])
    result: dict[str, Any] = {"n_train": cut, "n_evaluation": n, "config": dict(config)}
    for name, dist in (("policy", policy), ("greedy", greedy)):
        log = check_logged_rounds(
            reward=reward, action=action, propensity=propensity, action_dist=dist,
            estimated_rewards=scores,
        )  # fmt: skip
        result[name] = _summary(log, n_bootstrap, seed)
    rng = np.random.default_rng(seed)
    means = [float(np.mean(reward[rng.integers(0, n, n)])) for _ in range(n_bootstrap)]
    low, high = np.quantile(means, [0.025, 0.975])
    result["logged_policy"] = {
        "value": float(reward.mean()),
        "value_ci95": [float(low), float(high)],
    }
    if keep_reward_model:
        result["reward_model"] = scores
    return result
