"""The doubly robust estimate's reward model ``q(x, a)`` over logged rounds."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

__all__ = ["BanditLog", "reward_model"]


@dataclass(frozen=True)
class BanditLog:
    """Logged rounds in time order; ``reward`` in ``[0, 1]`` (loss = 1 - reward)."""

    name: str
    context: np.ndarray
    action: np.ndarray
    reward: np.ndarray
    propensity: np.ndarray
    n_actions: int


def reward_model(log: BanditLog, train: np.ndarray, evaluate: np.ndarray) -> np.ndarray:
    """``q(x, a)`` for every evaluation round and action: logistic regression on
    ``[standardised context, one-hot action]`` fitted on the training rounds (the
    training mean reward when the training rewards are all equal)."""
    from sklearn.linear_model import LogisticRegression
    from sklearn.preprocessing import StandardScaler

    k = log.n_actions
    scaler = StandardScaler().fit(log.context[train])
    labels = (log.reward[train] >= 0.5).astype(np.int64)
    if labels.min() == labels.max():
        return np.full((len(evaluate), k), float(log.reward[train].mean()))
    design = np.hstack([scaler.transform(log.context[train]), np.eye(k)[log.action[train]]])
    model = LogisticRegression(C=1.0, max_iter=500).fit(design, labels)
    x_eval = scaler.transform(log.context[evaluate])
    q = np.empty((len(evaluate), k))
    for a in range(k):
        one_hot = np.zeros((len(evaluate), k))
        one_hot[:, a] = 1.0
        q[:, a] = model.predict_proba(np.hstack([x_eval, one_hot]))[:, 1]
    return q
