"""TEUCB and TETS (Nilsson et al., "Tree Ensembles for Contextual Bandits", 2024) on LightGBM.

One gradient-boosted regressor maps ``(context, one-hot action)`` to the reward
``1 - loss`` of the rounds observed so far.  Every tree ``t`` keeps, per leaf ``l``, the
number ``n_tl`` of training rows that reach it and the sample variance ``s2_tl`` of
their rewards; the ensemble's variance at a row is ``sum_t s2_t,l_t(x) / n_t,l_t(x)``
(the trees taken as independent), its mean the boosted prediction.  TEUCB plays the
action of largest ``mean + sqrt(variance)``, TETS the largest draw from
``N(mean, variance)``.  The regressor is refitted on every observed round when their
number reaches ``ceil(first_fit * growth^k)`` (100, 110, 121, 134, ...); actions are
uniform before the first fit.  Defaults as the paper's runs: 50 trees of depth 6 (up to
64 leaves); the learning rate 0.3 is XGBoost's default (the paper's library), the
minimum of 20 rows a leaf LightGBM's.

:class:`TreeEnsembleBandit` holds the arithmetic; :class:`TreeEnsembleAgent` is the
simulator's agent around it.  ``lightgbm`` is optional (the ``sim`` extra).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any, Literal

import numpy as np

from banditree.explore import event_uniforms
from banditree.learners import Decision, Feedback

Rule = Literal["ucb", "ts"]


def lightgbm_available() -> bool:
    """True when the optional ``lightgbm`` package imports."""
    try:
        import lightgbm  # noqa: F401
    except ImportError:
        return False
    return True


def is_refit_round(n: int, first_fit: int = 100, growth: float = 1.1) -> bool:
    """True when ``n`` observed rounds are one of ``ceil(first_fit * growth^k)``, k >= 0."""
    if n < first_fit:
        return False
    k = math.floor(math.log(n / first_fit) / math.log(growth))
    # the two neighbouring k guard the float rounding of the logarithm
    return any(math.ceil(first_fit * growth**j - 1e-9) == n for j in (k - 1, k, k + 1) if j >= 0)


def leaf_statistics(
    leaves: np.ndarray, rewards: np.ndarray, n_leaves: int
) -> tuple[np.ndarray, np.ndarray]:
    """Per (tree, leaf): the number of rows and the sample variance of their rewards.

    Parameters
    ----------
    leaves : (n, T) int array
        The leaf each training row reaches in each tree.
    rewards : (n,) float array
        The rows' rewards.
    n_leaves : int
        Leaves per tree at most.

    Returns
    -------
    counts, variances : (T, n_leaves) arrays
        A leaf of fewer than two rows has variance 0.
    """
    n_trees = leaves.shape[1]
    counts = np.zeros((n_trees, n_leaves))
    variances = np.zeros((n_trees, n_leaves))
    for t in range(n_trees):
        column = leaves[:, t]
        count = np.bincount(column, minlength=n_leaves).astype(np.float64)
        total = np.bincount(column, weights=rewards, minlength=n_leaves)
        square = np.bincount(column, weights=rewards * rewards, minlength=n_leaves)
        many = count > 1
        spread = square[many] - total[many] ** 2 / count[many]
        variances[t, many] = np.maximum(spread, 0.0) / (count[many] - 1)
        counts[t] = count
    return counts, variances


def ensemble_variance(leaves: np.ndarray, counts: np.ndarray, variances: np.ndarray) -> np.ndarray:
    """``sum_t variances[t, leaf_t] / counts[t, leaf_t]`` for each row of ``leaves`` (m, T)."""
    trees = np.arange(leaves.shape[1])
    count = counts[trees, leaves]  # (m, T)
    return np.sum(variances[trees, leaves] / np.maximum(count, 1.0), axis=1)


class TreeEnsembleBandit:
    """TEUCB (``rule="ucb"``) or TETS (``rule="ts"``) over ``n_actions`` actions.

    Examples
    --------
    >>> bandit = TreeEnsembleBandit(2, 1, rule="ucb", seed=0)
    >>> bandit.choose([0.5], u=0.7)[0]  # uniform before the first fit
    1
    """

    def __init__(
        self,
        n_actions: int,
        n_features: int,
        *,
        rule: Rule = "ucb",
        seed: int = 0,
        n_trees: int = 50,
        depth: int = 6,
        learning_rate: float = 0.3,
        min_leaf_rows: int = 20,
        first_fit: int = 100,
        growth: float = 1.1,
    ) -> None:
        if n_actions < 2:
            raise ValueError(f"n_actions must be >= 2, got {n_actions}")
        if rule not in ("ucb", "ts"):
            raise ValueError(f"rule must be 'ucb' or 'ts', got {rule!r}")
        if first_fit < 1 or growth <= 1.0:
            raise ValueError(f"first_fit must be >= 1 and growth > 1, got {first_fit}, {growth}")
        self.n_actions, self.n_features, self.rule, self.seed = n_actions, n_features, rule, seed
        self.n_trees, self.depth, self.learning_rate = n_trees, depth, learning_rate
        self.min_leaf_rows, self.first_fit, self.growth = min_leaf_rows, first_fit, growth
        self._rng = np.random.default_rng([seed, 0x7E75])
        self._rows: list[np.ndarray] = []
        self._rewards: list[float] = []
        self._booster: Any = None
        self._values = np.zeros((0, 0))  # (T, leaves): each leaf's output
        self._counts = np.zeros((0, 0))
        self._variances = np.zeros((0, 0))
        self.fits = 0

    def design(self, contexts: np.ndarray) -> np.ndarray:
        """The rows ``(context, one-hot action)``: K per context, context-major.

        Shape: (m, d) -> (m * K, d + K).
        """
        x = np.asarray(contexts, dtype=np.float64).reshape(-1, self.n_features)
        k = self.n_actions
        return np.hstack([np.repeat(x, k, axis=0), np.tile(np.eye(k), (len(x), 1))])

    def estimates(self, contexts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Each action's mean reward and variance, (m, K) each (zeros before the first fit)."""
        m = np.asarray(contexts).reshape(-1, self.n_features).shape[0]
        if self._booster is None:
            return np.zeros((m, self.n_actions)), np.zeros((m, self.n_actions))
        leaves = np.asarray(
            self._booster.predict(self.design(contexts), pred_leaf=True, num_threads=1), np.int64
        )
        leaves = leaves.reshape(m * self.n_actions, -1)  # (m K, T)
        trees = np.arange(leaves.shape[1])
        mean = self._values[trees, leaves].sum(axis=1)
        variance = ensemble_variance(leaves, self._counts, self._variances)
        return mean.reshape(m, -1), variance.reshape(m, -1)

    def choose(self, context: Sequence[float] | np.ndarray, u: float) -> tuple[int, float, int]:
        """``(action, propensity, greedy action)``; ``u`` in [0, 1) picks the uniform action.

        The propensity is 1/K before the first fit and 1 for TEUCB after; TETS's is not
        computed (1): its logs are not for off-policy estimates.
        """
        if self._booster is None:
            return min(int(u * self.n_actions), self.n_actions - 1), 1.0 / self.n_actions, 0
        means, variances = self.estimates(np.asarray(context, dtype=np.float64))
        mean, variance = means[0], variances[0]
        spread = np.sqrt(variance)
        if self.rule == "ucb":
            score = mean + spread
        else:
            score = mean + spread * self._rng.standard_normal(self.n_actions)
        return int(np.argmax(score)), 1.0, int(np.argmax(mean))

    def observe(self, context: Sequence[float] | np.ndarray, action: int, reward: float) -> bool:
        """Record one round; refit when the schedule says.  True when it refitted."""
        if not 0 <= action < self.n_actions:
            raise ValueError(f"action must be in [0, {self.n_actions}), got {action}")
        if not math.isfinite(reward):
            raise ValueError(f"reward must be finite, got {reward}")
        row = np.zeros(self.n_features + self.n_actions)
        row[: self.n_features] = np.asarray(context, dtype=np.float64).reshape(-1)
        row[self.n_features + action] = 1.0
        self._rows.append(row)
        self._rewards.append(reward)
        if not is_refit_round(len(self._rows), self.first_fit, self.growth):
            return False
        self.fit()
        return True

    def fit(self) -> None:
        """Refit the regressor and its leaf statistics on every observed round."""
        import lightgbm

        X, y = np.vstack(self._rows), np.asarray(self._rewards)
        params = {
            "objective": "regression",
            "learning_rate": self.learning_rate,
            "max_depth": self.depth,
            "num_leaves": 2**self.depth,
            "min_data_in_leaf": self.min_leaf_rows,
            "num_threads": 1,
            "deterministic": True,
            "force_row_wise": True,
            "seed": self.seed,
            "verbosity": -1,
        }
        data = lightgbm.Dataset(X, y, params={"verbosity": -1})
        booster = lightgbm.train(params, data, num_boost_round=self.n_trees)
        n_leaves = 2**self.depth
        n_trees = booster.num_trees()
        values = np.zeros((n_trees, n_leaves))
        for t, tree in enumerate(booster.dump_model()["tree_info"]):
            for leaf in range(int(tree["num_leaves"])):
                values[t, leaf] = booster.get_leaf_output(t, leaf)
        leaves = booster.predict(X, pred_leaf=True, num_threads=1)
        leaves = np.asarray(leaves, np.int64).reshape(len(y), -1)
        self._counts, self._variances = leaf_statistics(leaves, y, n_leaves)
        self._values, self._booster = values, booster
        self.fits += 1


class TreeEnsembleAgent:
    """The simulator's agent around :class:`TreeEnsembleBandit` (numeric contexts).

    The uniform phase samples with the uniform fixed by ``(seed, event_id)``, as every
    learner of a run; the reward learned is ``1 - loss``.
    """

    def __init__(self, n_actions: int, n_features: int, *, rule: Rule, seed: int) -> None:
        self.bandit = TreeEnsembleBandit(n_actions, n_features, rule=rule, seed=seed)
        self.seed = seed

    def act(self, context: Sequence[float] | np.ndarray, event_id: str | None = None) -> Decision:
        x = tuple(float(v) for v in np.asarray(context, dtype=np.float64).reshape(-1))
        u, _ = event_uniforms(self.seed, event_id or "")
        action, propensity, greedy = self.bandit.choose(x, u)
        return Decision(
            event_id=event_id or "",
            context=x,
            model_version=self.bandit.fits,
            action=action,
            propensity=propensity,
            greedy_action=greedy,
            explored=action != greedy,
        )

    def learn(self, decision: Decision, feedback: Feedback) -> bool:
        if decision.action is None or feedback.loss is None:
            raise ValueError("TEUCB / TETS learn from an action and a single loss")
        if isinstance(decision.context, dict):
            raise ValueError("TEUCB / TETS read numeric contexts")
        self.bandit.observe(decision.context, decision.action, 1.0 - feedback.loss)
        return True

    def predict(self, contexts: np.ndarray) -> np.ndarray:
        means, _ = self.bandit.estimates(np.asarray(contexts, dtype=np.float64))
        return np.argmax(means, axis=1).astype(np.float64)
