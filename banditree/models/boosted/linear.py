"""A per-action ridge regression of the reward: the base a boosted ensemble adds to.

Trees fit a linear boundary in many small steps; a linear base fitted first (and the
trees boosted from its predictions, LightGBM's ``init_score``) gives them only the
residual.  Contexts are standardised by the fitted rows' mean and standard deviation and clipped
to :data:`Z_CLIP`; the intercept is not penalised unless an ``intercept_l2`` is given.
"""

from __future__ import annotations

import numpy as np

from banditree.core.arrays import FloatArray, IntArray

#: standardised contexts are clipped to this many standard deviations (the served form's)
Z_CLIP = 5.0


def fit_linear_base(
    contexts: FloatArray,
    actions: IntArray,
    rewards: FloatArray,
    n_actions: int,
    l2: float,
    intercept_l2: float | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """``(mean (d,), scale (d,), weights (K, d + 1))`` of a ridge fit per action.

    An action with no rows gets the mean reward of all rows as its intercept.

    Parameters
    ----------
    contexts, actions, rewards
        ``(B, d)``, ``(B,)``, ``(B,)`` the fitted rounds.
    n_actions
        ``K``.
    l2
        The ridge penalty on the standardised slopes.
    intercept_l2
        The ridge penalty on each action's intercept, which it shrinks towards 0 (None:
        next to none).  An action played on few rows, most of them where the policy
        rated it best, otherwise gets an intercept its few rows' slopes extrapolate
        from, often far above its reward elsewhere.
    """
    d = contexts.shape[1]
    none = np.zeros(d), np.ones(d), np.zeros((n_actions, d + 1))
    with np.errstate(over="ignore", invalid="ignore"):
        mean = contexts.mean(axis=0)
        sd = contexts.std(axis=0)
        scale = np.where(sd > 1e-12, 1.0 / np.where(sd > 1e-12, sd, 1.0), 0.0)
        offset = mean * scale
    if not all(np.isfinite(v).all() for v in (mean, scale, offset)):
        return none  # contexts too large for the statistics: no base rather than NaN
    z = np.empty((contexts.shape[0], d + 1))
    z[:, 0] = 1.0
    with np.errstate(over="ignore"):
        z[:, 1:] = contexts * scale
    z[:, 1:] -= offset
    np.clip(z[:, 1:], -Z_CLIP, Z_CLIP, out=z[:, 1:])
    weights = np.zeros((n_actions, d + 1))
    weights[:, 0] = float(rewards.mean()) if rewards.size else 0.0
    penalty = np.full(d + 1, l2)
    penalty[0] = 1e-6 if intercept_l2 is None else intercept_l2
    for a in range(n_actions):
        rows = actions == a
        if not rows.any():
            continue
        za = z[rows]
        gram = za.T @ za + np.diag(penalty)
        weights[a] = np.linalg.solve(gram, za.T @ rewards[rows])
    if not np.isfinite(weights).all():  # a degenerate solve: no base rather than NaN
        return none
    return mean, scale, weights
