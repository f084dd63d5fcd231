"""A contextual bandit on a boosted-tree ensemble refitted from the recent rounds.

Every learned round ``(context, action, 1 - loss)`` joins a window of the most recent
rounds (:class:`~banditree.learners.boosted.window.RoundWindow`).  On a geometric
schedule (the first fit after ``first_fit`` rounds, then each time the rounds learned
grow by ``refit_growth``, at most ``max_refit_interval`` apart) one LightGBM regression
of the reward on (context, one-hot action) is fitted to the window and frozen to numpy
arrays with each leaf's variance / count (:mod:`banditree.models.boosted`).  A decision
plays the action of the highest ``mean + optimism * std`` (TEUCB), or samples the
config's explorer over those scores.  Until the first fit a starter decides: the
online ``dgt`` learner of the same config, or uniform draws.  With ``compete`` the
``dgt`` learner keeps learning every round and both are scored by their progressive
squared error (:mod:`banditree.learners.boosted.compete`): with ``blend`` the decision
reads the mean of both predicted rewards, each weighted by the other's error; without,
the one of lower error decides.  Design and measurements:
``docs/decisions/boosted-bandit.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.core.records import Decision, Feedback
from banditree.explore import Explorer, event_uniforms, sample_action
from banditree.learners.base import Learner, Tensors
from banditree.learners.boosted.compete import ProgressiveErrors
from banditree.learners.boosted.window import RoundWindow, feedback_rewards
from banditree.learners.boosted_options import BoostedOptions
from banditree.learners.validation import InvalidInput, as_context, check_loss
from banditree.models.boosted.fit import BoostingSettings, fit_ensemble
from banditree.models.boosted.frozen import FrozenBoostedEnsemble

ENSEMBLE_PREFIX = "ensemble."
#: rounds the ensemble is scored on before it may decide (``compete``)
COMPETE_MIN_ROUNDS = 30
STARTER_PREFIX = "starter."


class BoostedBandit(Learner):
    """Classification bandit on a periodically refitted boosted ensemble.

    Parameters
    ----------
    n_features, n_actions
        Context width ``d`` and number of actions ``K``.
    settings
        The boosting settings of every fit (trees, depth, shrinkage...).
    options
        The schedule, window, optimism and starter.
    explorer
        The pmf explorer of ``options.exploration == "explorer"``.
    starter
        Builds the learner that decides before the first fit (None: uniform draws).
    seed
        Seeds event ids, draws and LightGBM.
    config
        The stored config this learner was built from.
    """

    task = "classification"

    def __init__(
        self,
        n_features: int,
        n_actions: int,
        *,
        settings: BoostingSettings,
        options: BoostedOptions,
        explorer: Explorer | None,
        starter: Callable[[], Learner] | None,
        seed: int = 0,
        config: dict[str, Any] | None = None,
    ) -> None:
        if n_features < 1 or n_actions < 2:
            raise ValueError(
                f"need n_features >= 1 and n_actions >= 2, got {n_features}, {n_actions}"
            )
        self.n_features, self.n_actions, self.seed = n_features, n_actions, seed
        self.settings, self.options = settings, options
        self._explorer = explorer
        self._config = dict(config or {})
        self._window = RoundWindow(options.window, n_features)
        self._ensemble: FrozenBoostedEnsemble | None = None
        self._starter: Learner | None = starter() if starter is not None else None
        self._compete = options.compete and self._starter is not None
        self._errors = ProgressiveErrors(options.compete_halflife, COMPETE_MIN_ROUNDS)
        self._version = 0
        self._fits = 0
        self._next_fit = options.first_fit

    @property
    def version(self) -> int:
        return self._version

    @property
    def fits(self) -> int:
        """Ensembles fitted so far."""
        return self._fits

    @property
    def ensemble_decides(self) -> bool:
        """Whether ``act`` plays the ensemble's choice (else the starter's)."""
        if self._ensemble is None:
            return False
        if not self._compete:
            return True
        if self.options.blend:
            return self._errors.rounds >= self._errors.min_rounds
        return self._errors.ensemble_leads

    # -- deciding -----------------------------------------------------------------------
    def optimistic_scores(self, x: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Predicted rewards ``(K,)`` and their ``mean + optimism * std`` ``(K,)``."""
        if self._ensemble is None:
            raise ValueError("no ensemble is fitted yet")
        mean, var = self._ensemble.action_scores(x)
        bonus = self.options.optimism * np.sqrt(var)
        if self._compete and self.options.blend and self._starter is not None:
            # inverse-error weights: each model weighted by the other's error (to a power)
            online = self._starter.reward_estimates(x)  # type: ignore[attr-defined]
            power = self.options.blend_power
            errors = self._errors
            if self.options.blend_score == "policy_value":
                e_online, e_ensemble = errors.online_policy_loss, errors.ensemble_policy_loss
            else:
                e_online, e_ensemble = errors.online, errors.ensemble
            e_online, e_ensemble = e_online**power, e_ensemble**power
            total = e_online + e_ensemble
            if total > 0.0:
                mean = (e_online * mean + e_ensemble * online) / total
                if self.options.blend_bonus == "weighted":
                    bonus = bonus * (e_online / total)
        return mean, mean + bonus

    def act(self, context: Sequence[float] | FloatArray, event_id: str | None = None) -> Decision:
        x = as_context(context, self.n_features)
        event_id = self._next_event_id(event_id)
        values = tuple(x.tolist())
        if not self.ensemble_decides:
            if self._starter is not None:
                inner = self._starter.act(x, event_id)
                return Decision.of_action(
                    event_id, values, self._version, int(inner.action or 0),
                    inner.propensity, int(inner.greedy_action or 0), None, {},
                )  # fmt: skip
            u = event_uniforms(self.seed, event_id)[0]
            action = min(int(u * self.n_actions), self.n_actions - 1)
            k = self.n_actions
            return Decision.of_action(
                event_id, values, self._version, action, 1.0 / k, action, None, {}
            )
        mean, scores = self.optimistic_scores(x)
        greedy = int(np.argmax(mean))
        if self.options.exploration == "ucb" or self._explorer is None:
            action, propensity = int(np.argmax(scores)), 1.0
        else:
            pmf = self._explorer(scores, self._n_learned)
            u = event_uniforms(self.seed, event_id)[0]
            action = sample_action(pmf, u)
            propensity = float(pmf[action])
        return Decision.of_action(
            event_id, values, self._version, action, propensity, greedy, None, {}
        )

    def action_probabilities(self, context: Sequence[float] | FloatArray) -> FloatArray:
        """The probability ``act`` plays each action for ``context`` ``(K,)``."""
        x = as_context(context, self.n_features)
        k = self.n_actions
        if not self.ensemble_decides:
            starter = self._starter
            probabilities = getattr(starter, "action_probabilities", None)
            if probabilities is not None:
                result: FloatArray = probabilities(x)
                return result
            return np.full(k, 1.0 / k)
        _, scores = self.optimistic_scores(x)
        if self.options.exploration == "ucb" or self._explorer is None:
            return np.eye(k)[int(np.argmax(scores))]
        pmf: FloatArray = self._explorer(scores, self._n_learned)
        return pmf

    def predict(self, contexts: FloatArray) -> FloatArray:
        """Greedy actions (highest predicted reward, blended as ``act`` blends) ``(B,)``."""
        x = np.asarray(contexts, dtype=np.float64).reshape(-1, self.n_features)
        if self._ensemble is None or not self.ensemble_decides:
            if self._starter is not None:
                return self._starter.predict(x)
            return np.zeros(x.shape[0])
        out = np.array([np.argmax(self.optimistic_scores(row)[0]) for row in x])
        return out.astype(np.float64)

    # -- learning -----------------------------------------------------------------------
    def check(self, decision: Decision, feedback: Feedback) -> None:
        if isinstance(decision.context, dict):
            raise InvalidInput("decision.context", "must be a list of numbers")
        as_context(decision.context, self.n_features, "decision.context")
        if decision.action is None or not 0 <= decision.action < self.n_actions:
            raise InvalidInput("decision.action", f"must be in [0, {self.n_actions - 1}]")
        if not (0.0 < decision.propensity <= 1.0):
            raise InvalidInput("decision.propensity", "must be in (0, 1]")
        if feedback.label is not None:  # full information: every action's reward
            label = feedback.label
            if label != int(label) or not 0 <= label < self.n_actions:
                raise InvalidInput("label", f"must be an action in [0, {self.n_actions - 1}]")
        elif feedback.loss is None:
            raise InvalidInput("feedback", "a boosted model needs a single 'loss' or a 'label'")
        else:
            check_loss(feedback.loss, (0.0, 1.0))
        if self._starter is not None:
            self._starter.check(decision, feedback)

    def learn(self, decision: Decision, feedback: Feedback) -> bool:
        self.check(decision, feedback)
        x = np.array(decision.context, dtype=np.float64)
        assert decision.action is not None  # checked
        rewards = feedback_rewards(feedback, self.n_actions, self._config.get("loss_matrix"))
        if self._compete and self._ensemble is not None:
            self._score(x, decision.action, float(rewards[decision.action]), decision.propensity)
        if self._starter is not None:
            origin = getattr(self._starter, "_explore_origin", None)
            self._starter.learn(decision, feedback)
            if self.options.restart_on_drift and origin is not None:
                if getattr(self._starter, "_explore_origin", origin) != origin:
                    self._restart()  # the tree's detector saw the loss rise
        if feedback.label is None:
            self._window.append(x, decision.action, float(rewards[decision.action]))
        else:  # full information: a row for every action
            for action in range(self.n_actions):
                self._window.append(x, action, float(rewards[action]))
        self._count_feedback(feedback)
        self._version += 1
        if self._n_learned >= self._next_fit:
            self._refit()
        return True

    def _score(self, x: FloatArray, action: int, reward: float, propensity: float) -> None:
        """Both models' predicted reward of the played action, before either learns it."""
        assert self._ensemble is not None and self._starter is not None
        estimates = getattr(self._starter, "reward_estimates", None)
        if estimates is None:
            return
        online = estimates(x)
        if self.options.blend_score == "policy_value":
            ensemble = self._ensemble.action_scores(x)[0]
            greedy = (int(np.argmax(online)) == action, int(np.argmax(ensemble)) == action)
            self._errors.update(
                float(online[action]), float(ensemble[action]), reward, greedy, propensity
            )
            return
        self._errors.update(float(online[action]), self._ensemble.action_value(x, action), reward)

    def _restart(self) -> None:
        """After a detected change: forget the window and the ensemble; the tree decides
        until the fit ``first_fit`` rounds from now (this round is the window's first)."""
        self._window = RoundWindow(self.options.window, self.n_features)
        self._ensemble = None
        self._errors = ProgressiveErrors(self.options.compete_halflife, COMPETE_MIN_ROUNDS)
        self._next_fit = self._n_learned + self.options.first_fit

    def _refit(self) -> None:
        """Fit the window and schedule the next fit."""
        contexts, actions, rewards = self._window.rows()
        self._ensemble = fit_ensemble(
            contexts, actions, rewards, self.n_actions, self.settings, self.seed
        )
        self._fits += 1
        if not self._compete:
            self._starter = None  # the ensemble decides from now on
        n = self._n_learned
        grown = math.ceil(n * self.options.refit_growth)
        self._next_fit = n + max(1, min(grown - n, self.options.max_refit_interval))

    # -- state --------------------------------------------------------------------------
    def state(self) -> tuple[Tensors, dict[str, Any]]:
        tensors: Tensors = dict(self._window.tensors())
        if self._ensemble is not None:
            for name, value in self._ensemble.tensors().items():
                tensors[ENSEMBLE_PREFIX + name] = value
        starter_meta = None
        if self._starter is not None:
            inner_tensors, starter_meta = self._starter.state()
            for name, value in inner_tensors.items():
                tensors[STARTER_PREFIX + name] = value
        meta = {
            "config": self.config(),
            "version": self._version,
            "fits": self._fits,
            "next_fit": self._next_fit,
            "starter": starter_meta,
            "errors": self._errors.state(),
            **self._counter_state(),
        }
        return tensors, meta

    def load_state(self, tensors: Tensors, meta: dict[str, Any]) -> None:
        self._window.load(tensors)
        ensemble = {
            k[len(ENSEMBLE_PREFIX) :]: v
            for k, v in tensors.items()
            if k.startswith(ENSEMBLE_PREFIX)
        }
        self._ensemble = (
            FrozenBoostedEnsemble.from_tensors(ensemble, self.n_features, self.n_actions)
            if ensemble
            else None
        )
        if meta.get("starter") is None:
            self._starter = None
        elif self._starter is None:
            raise ValueError("checkpoint holds a starter this config does not build")
        else:
            inner = {
                k[len(STARTER_PREFIX) :]: v
                for k, v in tensors.items()
                if k.startswith(STARTER_PREFIX)
            }
            self._starter.load_state(inner, meta["starter"])
        self._errors.load(meta["errors"])
        self._version = int(meta["version"])
        self._fits = int(meta["fits"])
        self._next_fit = int(meta["next_fit"])
        self._load_counter_state(meta)

    def export_model(self) -> dict[str, Any]:
        """The served ensemble's shape (its arrays are in the checkpoint)."""
        ensemble = self._ensemble
        return {
            "kind": "boosted",
            "fits": self._fits,
            "n_trees": 0 if ensemble is None else ensemble.n_trees,
            "depth": self.settings.depth,
            "window_rounds": len(self._window),
        }
