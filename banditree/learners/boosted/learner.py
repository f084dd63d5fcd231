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
from dataclasses import replace
from functools import partial
from typing import Any, Protocol, cast

import numpy as np

from banditree.core.arrays import FloatArray, IntArray
from banditree.core.records import Decision, Feedback
from banditree.explore import Explorer, event_uniforms, sample_action
from banditree.kernel import (
    boosted_decide,
    boosted_leaf_sums,
    boosted_route,
    boosted_value,
    boosted_values,
    native,
)
from banditree.learners.base import Learner, Tensors
from banditree.learners.boosted.codes import CategoryCodes
from banditree.learners.boosted.compete import ActionErrors, PolicySwitch, ProgressiveErrors
from banditree.learners.boosted.readable import ReadableOnlineTree
from banditree.learners.boosted.refits import (
    BACKGROUND_ROWS,
    PendingFit,
    apply_round,
    preload_lightgbm,
)
from banditree.learners.boosted.window import RoundWindow, feedback_rewards
from banditree.learners.boosted_options import BoostedOptions
from banditree.learners.gradient_bandit.kernel_calls import explorer_setting
from banditree.learners.gradient_bandit.learn import Learning
from banditree.learners.validation import InvalidInput, as_context, check_loss
from banditree.models.boosted.fit import (
    BoostingSettings,
    fit_base,
    fit_ensemble,
    grow_ensemble,
)
from banditree.models.boosted.frozen import FrozenBoostedEnsemble
from banditree.models.boosted.linear import Z_CLIP

ENSEMBLE_PREFIX = "ensemble."
#: the tensors of a fit started and not yet applied (``refits.PendingFit``)
PENDING_PREFIX = "pending."
#: rounds the ensemble is scored on before it may decide (``compete``)
COMPETE_MIN_ROUNDS = 30
#: the same after a restart (``restart_on_drift``): the tree, whose splits survive the
#: change, decides alone until the ensemble refitted on the new rounds has been scored
#: this long (``benchmarks/results/bandit_drift.md``: 30, 200, 500, 1,000, 2,000, 5,000)
RESTART_MIN_ROUNDS = 2_000
STARTER_PREFIX = "starter."
#: ``policy_switch``: the half-life of the policies' estimated gains, and the rounds
#: scored before a challenger may decide
SWITCH_HALFLIFE = 2_000.0
SWITCH_MIN_ROUNDS = 200
#: ``blend_weights: per_action``: each action's errors are shrunk towards the all-action
#: means as if those were measured on this many more rounds of it
ACTION_PRIOR_ROUNDS = 100.0
#: ``policy_switch``: the challengers each setting scores against the blend
CHALLENGERS = {
    "off": (),
    "ensemble": ("ensemble",),
    "tree": ("tree",),
    "both": ("ensemble", "tree"),
}
#: ``rule_switch``: the decision rules each setting scores against the explorer over
#: the blend (``ucb``: the ensemble's mean + ``rule_optimism`` x std, propensity 1;
#: ``tree``: the online tree with its own explorer)
RULES = {
    "off": (),
    "ucb": ("ucb",),
    "tree": ("tree",),
    "both": ("ucb", "tree"),
}


class _RewardEstimates(Protocol):
    """A starter that predicts every action's reward (the ``dgt`` learner does)."""

    def reward_estimates(self, context: FloatArray) -> FloatArray: ...


class _BatchStarter(Protocol):
    """A starter that learns a batch and tells what :meth:`BoostedBandit._score` reads
    (the ``dgt`` learner does: ``Learning.learn_batch_served``)."""

    def learn_batch_served(
        self,
        decisions: Sequence[Decision],
        feedbacks: Sequence[Feedback],
        rows: FloatArray | None = None,
    ) -> tuple[list[bool | ValueError | KeyError | TypeError], FloatArray, list[int]]: ...


def _serves_batches(starter: Learner) -> bool:
    """Whether ``starter`` learns batches as :class:`_BatchStarter` (its ``learn`` the
    one ``learn_batch_served`` follows)."""
    return isinstance(starter, Learning) and type(starter).learn is Learning.learn


class BoostedBandit(ReadableOnlineTree, Learner):
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
    #: a feedback's loss is in [0, 1] (:meth:`check`): what a service checks a model's
    #: ``default_loss`` against
    loss_bounds: tuple[float, float] | None = (0.0, 1.0)

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
        codes: CategoryCodes | None = None,
        config: dict[str, Any] | None = None,
    ) -> None:
        if n_features < 1 or n_actions < 2:
            raise ValueError(
                f"need n_features >= 1 and n_actions >= 2, got {n_features}, {n_actions}"
            )
        self.n_features, self.n_actions, self.seed = n_features, n_actions, seed
        self.settings, self.options = settings, options
        if codes is not None and codes.width != n_features:
            raise ValueError(f"codes of {codes.width} columns for {n_features} features")
        self._codes = codes
        # the ensemble's input width: the context's columns, then the codes'
        self._ensemble_features = n_features if codes is None else codes.out_width
        self._explorer = explorer
        self._config = dict(config or {})
        self._window = RoundWindow(options.window, n_features)
        self._ensemble: FrozenBoostedEnsemble | None = None
        self._starter: Learner | None = starter() if starter is not None else None
        self._compete = options.compete and self._starter is not None
        self._errors = ProgressiveErrors(options.compete_halflife, COMPETE_MIN_ROUNDS)
        # rule_switch scores whole rules (pmfs), policy_switch greedy policies
        self._rules = self._blends and options.rule_switch != "off"
        self._challengers = (
            RULES[options.rule_switch]
            if self._rules
            else CHALLENGERS[options.policy_switch]
            if self._blends
            else ()
        )
        self._switch = self._new_switch()
        self._action_errors = self._new_action_errors()
        self._version = 0
        self._fits = 0
        self._next_fit = self._first_event()
        # rounds learned at the last restart (``restart_on_drift``): the explorer's
        # schedule and the refit schedule count from it
        self._origin = 0
        self._pending_fit: PendingFit | None = None
        # window rows appended so far (``warm_every``): the rows the deciding ensemble's
        # fit read end at ``_through_rows``, a pending fit's at ``_pending_through_rows``
        self._rows_total = 0
        self._through_rows = 0
        self._pending_through_rows = 0
        # the round the ensemble was last fitted or grown, and its trees grown since its fit
        self._last_grow = 0
        self._warm_added = 0
        # LightGBM's import asked of the fit worker (once a fit is near; not state)
        self._preloaded = False
        # the compiled kernel decides (None: the numpy reference, BANDITREE_KERNEL=reference)
        self._kernel = native()

    def _wide(self, x: FloatArray) -> FloatArray:
        """``x`` as the ensemble reads it: with its code columns (``category_codes``)."""
        return x if self._codes is None else self._codes.extend(x)

    @property
    def version(self) -> int:
        return self._version

    @property
    def fits(self) -> int:
        """Ensembles fitted so far."""
        return self._fits

    @property
    def _blends(self) -> bool:
        """Whether the decision reads both models' blend (``compete`` and ``blend``)."""
        return self._compete and self.options.blend and self._starter is not None

    def _new_switch(self) -> PolicySwitch | None:
        if not self._challengers:
            return None
        return PolicySwitch(len(self._challengers), SWITCH_HALFLIFE, SWITCH_MIN_ROUNDS)

    def _new_action_errors(self) -> ActionErrors | None:
        if not self._blends or self.options.blend_weights != "per_action":
            return None
        return ActionErrors(self.n_actions, self.options.compete_halflife, ACTION_PRIOR_ROUNDS)

    def _blend_weights(self) -> tuple[float | FloatArray, float | FloatArray]:
        """The tree's and the ensemble's errors the blend weighs them by (each model by
        the other's): one pair (:meth:`_blend_errors`), or each action's ``(K,)`` under
        ``blend_weights: per_action``."""
        if self._action_errors is not None:
            return self._action_errors.errors()
        return self._blend_errors()

    def _ensemble_share(self) -> FloatArray:
        """The ensemble's weight in the blend, ``e_online / (e_online + e_ensemble)`` (1
        before either model has an error): 0-d, or ``(K,)`` per action."""
        e_online, e_ensemble = self._blend_weights()
        total = np.asarray(e_online + e_ensemble)
        share: FloatArray = np.divide(e_online, total, out=np.ones_like(total), where=total > 0.0)
        return share

    def _blend(self, mean: FloatArray, online: FloatArray) -> FloatArray:
        """The blend of the ensemble's ``mean`` and the tree's ``online`` rewards ``(K,)``:
        each model weighted by the other's error (:meth:`_blend_weights`)."""
        e_online, e_ensemble = self._blend_weights()
        total = np.asarray(e_online + e_ensemble)
        safe = np.where(total > 0.0, total, 1.0)
        blended: FloatArray = np.where(
            total > 0.0, (e_online * mean + e_ensemble * online) / safe, mean
        )
        return blended

    @property
    def deciding_policy(self) -> str:
        """``policy_switch``: whose greedy policy ``act`` explores once the ensemble
        decides: ``blend``, ``ensemble`` (alone) or ``tree`` (alone); ``rule_switch``:
        ``blend`` (the explorer over it), ``ucb`` or ``tree`` (the tree's own rule)."""
        switch = self._switch
        if switch is None or switch.chosen < 0:
            return "blend"
        return self._challengers[switch.chosen]

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
        mean, var = self._ensemble.action_scores(self._wide(x))
        bonus = self._bonus_factor() * np.sqrt(var)
        if self._blends and self.deciding_policy == "blend":
            # inverse-error weights: each model weighted by the other's error (to a power)
            online = cast(_RewardEstimates, self._starter).reward_estimates(x)
            if self.options.blend_bonus == "weighted":  # times the ensemble's weight
                bonus = bonus * self._ensemble_share()
            mean = self._blend(mean, online)
        scores = mean + bonus
        if self.options.bonus_shift:  # the top score is the top predicted reward
            scores = scores - (float(scores.max()) - float(mean.max()))
        return mean, scores

    def _bonus_factor(self) -> float:
        """The std's factor in the served scores: ``rule_optimism`` while the ``ucb``
        rule decides (``rule_switch``), else :meth:`_optimism`."""
        if self.deciding_policy == "ucb":
            return self.options.rule_optimism
        return self._optimism()

    @property
    def _greedy_rule(self) -> bool:
        """Whether the served scores' argmax is played at probability 1 (``exploration:
        ucb``, no explorer, or the ``ucb`` rule of ``rule_switch`` deciding)."""
        return (
            self.options.exploration == "ucb"
            or self._explorer is None
            or self.deciding_policy == "ucb"
        )

    def _optimism(self) -> float:
        """The bonus's factor now: ``optimism`` until ``first_fit`` rounds, then times
        ``(first_fit / rounds) ** optimism_decay``."""
        options = self.options
        if options.optimism == 0.0 or options.optimism_decay == 0.0:
            return options.optimism
        ratio = options.first_fit / max(self._n_learned, options.first_fit)
        return float(options.optimism * ratio**options.optimism_decay)

    def _blend_errors(self) -> tuple[float, float]:
        """The tree's and the ensemble's errors as the blend weighs them (each model is
        weighted by the other's): ``blend_score``'s measure to ``blend_power``."""
        errors, power = self._errors, self.options.blend_power
        if self.options.blend_score == "stacked":
            w = errors.stacked_weight  # the ensemble's weight is e_online / the total
            return w, 1.0 - w
        if self.options.blend_score == "policy_value":
            e_online, e_ensemble = errors.online_policy_loss, errors.ensemble_policy_loss
        else:
            e_online, e_ensemble = errors.online, errors.ensemble
        return e_online**power, e_ensemble**power

    def act(self, context: Sequence[float] | FloatArray, event_id: str | None = None) -> Decision:
        x = as_context(context, self.n_features)
        event_id = self._next_event_id(event_id)
        values = tuple(x.tolist())
        if not self.ensemble_decides or self.deciding_policy == "tree":
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
        decided = self._kernel_decision(x, event_id)
        if decided is not None:
            action, propensity, greedy = decided
            return Decision.of_action(
                event_id, values, self._version, action, propensity, greedy, None, {}
            )
        mean, scores = self.optimistic_scores(x)
        greedy = int(np.argmax(mean))
        if self._greedy_rule:
            action, propensity = int(np.argmax(scores)), 1.0
        else:
            assert self._explorer is not None  # not _greedy_rule
            pmf = self._explorer(scores, self._explore_rounds)
            u = event_uniforms(self.seed, event_id)[0]
            action = sample_action(pmf, u)
            propensity = float(pmf[action])
        return Decision.of_action(
            event_id, values, self._version, action, propensity, greedy, None, {}
        )

    @property
    def batch_exact(self) -> bool:
        """``act_columns`` is :meth:`act` row by row (the base's): the same decisions, so
        a service decides a tick's predicts of a boosted model together."""
        return True

    def _kernel_decision(self, x: FloatArray, event_id: str) -> tuple[int, float, int] | None:
        """``(action, propensity, greedy)`` of the ensemble's decision by one kernel call,
        or None where the numpy path decides (no kernel, or an explorer it does not
        compute)."""
        ensemble, module = self._ensemble, self._kernel
        if module is None or ensemble is None:
            return None
        if self.options.bonus_shift and self._bonus_factor() > 0.0:
            return None  # the kernel adds the bonus unshifted
        explorer, parameter, uniform = None, 0.0, 0.0
        if not self._greedy_rule:
            assert self._explorer is not None
            setting = explorer_setting(self._explorer, self._explore_rounds)
            if setting is None:
                return None
            explorer, parameter = setting
            uniform = event_uniforms(self.seed, event_id)[0]
        online = None
        if self._blends and self.deciding_policy == "blend":
            if self.options.blend_bonus != "full" or self._action_errors is not None:
                return None  # the kernel adds the bonus in full, with one pair of weights
            online = cast(_RewardEstimates, self._starter).reward_estimates(x)
        action, propensity, greedy, _, _ = boosted_decide(
            module, self._wide(x), ensemble.tree_arrays, ensemble.linear_arrays, Z_CLIP, online,
            self._blend_errors(), self._bonus_factor(), explorer,
            parameter, uniform,
        )  # fmt: skip
        return action, propensity, greedy

    def action_probabilities(self, context: Sequence[float] | FloatArray) -> FloatArray:
        """The probability ``act`` plays each action for ``context`` ``(K,)``."""
        x = as_context(context, self.n_features)
        k = self.n_actions
        if not self.ensemble_decides or self.deciding_policy == "tree":
            starter = self._starter
            probabilities = getattr(starter, "action_probabilities", None)
            if probabilities is not None:
                result: FloatArray = probabilities(x)
                return result
            return np.full(k, 1.0 / k)
        _, scores = self.optimistic_scores(x)
        if self._greedy_rule:
            return np.eye(k)[int(np.argmax(scores))]
        assert self._explorer is not None
        pmf: FloatArray = self._explorer(scores, self._explore_rounds)
        return pmf

    @property
    def _explore_rounds(self) -> int:
        """The rounds the explorer's schedule reads: learned since the last restart."""
        return self._n_learned - self._origin

    def predict(self, contexts: FloatArray) -> FloatArray:
        """Greedy actions (highest predicted reward, blended as ``act`` blends) ``(B,)``."""
        x = np.asarray(contexts, dtype=np.float64).reshape(-1, self.n_features)
        if self._ensemble is None or not self.ensemble_decides or self.deciding_policy == "tree":
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
            check_loss(feedback.loss, self.loss_bounds)
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
            self._rows_total += 1
        else:  # full information: a row for every action
            for action in range(self.n_actions):
                self._window.append(x, action, float(rewards[action]))
            self._rows_total += self.n_actions
        self._count_feedback(feedback)
        self._version += 1
        self._fit_events()
        return True

    def _fit_events(self) -> None:
        """After a learned round: use a pending fit at its round, refit on schedule."""
        self._preload()
        if self._pending_fit is not None and self._n_learned >= self._pending_fit.apply_at:
            pending, self._pending_fit = self._pending_fit, None
            self._use(pending.result(), self._pending_through_rows)
        if self._n_learned >= self._next_fit:
            self._refit()
        if self._grows and self._n_learned - self._last_grow >= cast(int, self.options.warm_every):
            self._grow()

    @property
    def _base_only(self) -> bool:
        """Whether ``base_first_fit``'s base alone is fitted now: before the trees' first
        fit, ``first_fit`` rounds from the model's first (or its restart)."""
        return self.options.base_first_fit is not None and (
            self._n_learned - self._origin < self.options.first_fit
        )

    @property
    def _grows(self) -> bool:
        """Whether a warm start is due some round: ``warm_every`` set, an ensemble of
        trees to grow (not ``base_first_fit``'s base alone), and fewer than ``n_trees``
        trees grown on it since its fit."""
        return (
            self.options.warm_every is not None
            and self._ensemble is not None
            and not self._base_only
            and self._warm_added + self.options.warm_trees <= self.settings.n_trees
        )

    def _grow(self) -> None:
        """A warm start: ``warm_trees`` trees more on the window rows the ensemble's fit
        has not read (:func:`~banditree.models.boosted.fit.grow_ensemble`), inside
        ``learn`` (a few hundred rows, a few milliseconds), used at once."""
        assert self._ensemble is not None
        self._last_grow = self._n_learned
        new = min(self._rows_total - self._through_rows, len(self._window))
        if new < 1:
            return
        contexts, actions, rewards = self._window.rows()
        kernel = self._kernel
        route = None if kernel is None else partial(boosted_route, kernel)
        sums = None if kernel is None else partial(boosted_leaf_sums, kernel)
        self._ensemble = grow_ensemble(
            self._ensemble, self._wide(contexts[-new:]), actions[-new:], rewards[-new:],
            self.n_actions, self.settings, self.options.warm_trees, self.seed, route, sums,
        )  # fmt: skip
        self._warm_added += self.options.warm_trees

    def _rounds_to_event(self) -> int:
        """The rounds that may be learned before :meth:`_fit_events` has work (>= 1)."""
        rounds = self._next_fit - self._n_learned
        if self._pending_fit is not None:
            rounds = min(rounds, self._pending_fit.apply_at - self._n_learned)
        if self._grows:
            warm = cast(int, self.options.warm_every)
            rounds = min(rounds, self._last_grow + warm - self._n_learned)
        return max(rounds, 1)

    def learn_batch(
        self, decisions: Sequence[Decision], feedbacks: Sequence[Feedback]
    ) -> list[bool | ValueError | KeyError | TypeError]:
        """:meth:`learn` pair by pair, the same state after it, for a fraction of the cost.

        The tree learns each run of plain entries (a finite context, an action and a
        propensity in range, a loss in ``[0, 1]``) in one
        :meth:`~banditree.learners.gradient_bandit.learn.Learning.learn_batch_served`
        call, which gives the predicted reward of each entry's action its served tree
        had just before learning it (what :meth:`_score` reads) and the entries whose
        detected change restarts this learner.  Then the rounds between two fit events
        are scored against the ensemble in one kernel call, appended to the window and
        counted together, each event at its round.  Other entries (a label, a value of
        another type), and any batch where the tree is not such a learner, go through
        :meth:`learn`.
        """
        n = len(decisions)
        starter = self._starter
        if (
            n != len(feedbacks)
            or type(self).learn is not BoostedBandit.learn
            or self.options.blend_score == "policy_value"  # reads every action's estimate
            or self._switch is not None  # so does policy_switch
            or (starter is not None and not (self._compete and _serves_batches(starter)))
        ):
            return super().learn_batch(decisions, feedbacks)
        try:
            rows = np.array([d.context for d in decisions], dtype=np.float64)
        except (TypeError, ValueError):
            return super().learn_batch(decisions, feedbacks)
        if rows.shape != (n, self.n_features):
            return super().learn_batch(decisions, feedbacks)
        plain = self._plain_entries(decisions, feedbacks, rows)
        out: list[bool | ValueError | KeyError | TypeError] = []
        i = 0
        while i < n:
            if not plain[i]:  # learn's own checks name what it refuses
                try:
                    out.append(self.learn(decisions[i], feedbacks[i]))
                except (ValueError, KeyError, TypeError) as err:
                    out.append(err)
                i += 1
                continue
            j = i + 1
            while j < n and plain[j]:
                j += 1
            out += self._learn_plain(decisions[i:j], feedbacks[i:j], rows[i:j])
            i = j
        return out

    def _plain_entries(
        self, decisions: Sequence[Decision], feedbacks: Sequence[Feedback], rows: FloatArray
    ) -> list[bool]:
        """Whether each entry passes this learner's own checks (:meth:`check` but the
        starter's) as a plain round: a finite context, an ``int`` action in range, a
        ``float`` propensity in ``(0, 1]``, an ``int`` or ``float`` loss in ``[0, 1]`` and
        no label."""
        k = self.n_actions
        finite = cast(list[bool], np.isfinite(rows).all(axis=1).tolist())
        return [
            ok
            and type(d.action) is int
            and 0 <= d.action < k
            and type(d.propensity) is float
            and 0.0 < d.propensity <= 1.0
            and f.label is None
            and type(f.loss) in (float, int)
            and 0.0 <= cast(float, f.loss) <= 1.0
            for ok, d, f in zip(finite, decisions, feedbacks, strict=True)
        ]

    def _learn_plain(
        self, decisions: Sequence[Decision], feedbacks: Sequence[Feedback], rows: FloatArray
    ) -> list[bool | ValueError | KeyError | TypeError]:
        """:meth:`learn` of a run of plain entries (:meth:`_plain_entries`), ``rows``
        their contexts."""
        starter = self._starter
        m = len(decisions)
        served: FloatArray | None = None
        drifts: list[int] = []
        if starter is None:
            results: list[bool | ValueError | KeyError | TypeError] = [True] * m
        else:
            batch = cast(_BatchStarter, starter)
            results, served, drifts = batch.learn_batch_served(decisions, feedbacks, rows)
        learned = [i for i, r in enumerate(results) if type(r) is bool]
        if not self.options.restart_on_drift:
            drifts = []
        actions = np.array([d.action for d in decisions], dtype=np.int64)
        losses = [float(cast(float, f.loss)) for f in feedbacks]
        rewards = 1.0 - np.array(losses)
        position, changes = 0, set(drifts)
        while position < len(learned):
            run = learned[position : position + self._rounds_to_event()]
            change = next((i for i, entry in enumerate(run) if entry in changes), None)
            if change == 0:  # the entry whose detected change restarts this learner
                run = run[:1]
            elif change is not None:
                run = run[:change]
            at = np.array(run, dtype=np.int64)
            if self._compete and self._ensemble is not None:
                assert served is not None
                self._score_rows(rows[at], actions[at], served[at], rewards[at])
            if change == 0:
                self._restart()
            self._window.extend(rows[at], actions[at], rewards[at])
            self._rows_total += len(run)
            loss_sum = self._loss_sum
            for i in run:  # _count_feedback's additions, in order
                loss_sum += losses[i]
            self._loss_sum = loss_sum
            self._n_learned += len(run)
            self._version += len(run)
            self._fit_events()
            position += len(run)
        return [True if type(r) is bool else r for r in results]

    def _score_rows(
        self, x: FloatArray, actions: IntArray, online: FloatArray, rewards: FloatArray
    ) -> None:
        """:meth:`_score` of rounds in order: contexts ``x`` ``(B, d)``, their actions, the
        tree's served predicted rewards of them, their rewards."""
        ensemble = self._ensemble
        assert ensemble is not None
        x = self._wide(x)
        if self._kernel is None:
            values = [
                ensemble.action_value(row, a) for row, a in zip(x, actions.tolist(), strict=True)
            ]
        else:
            values = boosted_values(
                self._kernel, x, actions, ensemble.tree_arrays, ensemble.linear_arrays, Z_CLIP
            ).tolist()
        online_values, reward_values = online.tolist(), rewards.tolist()
        self._errors.update_rounds(online_values, values, reward_values)
        if self._action_errors is not None:  # each round in order, as _score
            update = self._action_errors.update
            for a, o, v, r in zip(
                actions.tolist(), online_values, values, reward_values, strict=True
            ):
                update(a, o, v, r)

    def prepare_to_learn(self) -> None:
        """Import LightGBM on the fit worker now if a fit is near (:meth:`_preload`)."""
        self._preload()

    def _preload(self) -> None:
        """Import LightGBM on the fit worker, not in the first fit's ``learn``, once the
        model has fitted or learned half its ``first_fit`` rounds: the import (sklearn,
        pandas and scipy with it) costs seconds of CPU, which a model that never nears
        a fit (a process's many small or idle models, a test's few feedbacks) never
        pays."""
        if self._preloaded:
            return
        if self._fits or self._n_learned - self._origin >= self.options.first_fit // 2:
            self._preloaded = True
            preload_lightgbm()

    def _score(self, x: FloatArray, action: int, reward: float, propensity: float) -> None:
        """Both models' predicted reward of the played action, before either learns it."""
        assert self._ensemble is not None and self._starter is not None
        estimates = getattr(self._starter, "reward_estimates", None)
        if estimates is None:
            return
        if self._switch is not None and self._rules:
            self._score_rules(x, estimates(x), action, reward, propensity)
            return
        if self._switch is not None:
            self._score_policies(x, estimates(x), action, reward, propensity)
            return
        if self.options.blend_score == "policy_value":
            scores = estimates(x)
            ensemble = self._ensemble.action_scores(self._wide(x))[0]
            greedy = (int(np.argmax(scores)) == action, int(np.argmax(ensemble)) == action)
            self._errors.update(
                float(scores[action]), float(ensemble[action]), reward, greedy, propensity
            )
            return
        served = getattr(self._starter, "served_rewards", None)
        if served is not None:  # the numbers learn_batch's tree records
            online = float(served(x.reshape(1, -1), np.array([action], dtype=np.int64))[0])
        else:
            online = float(estimates(x)[action])
        if self._kernel is None:
            value = self._ensemble.action_value(self._wide(x), action)
        else:
            value = boosted_value(
                self._kernel, self._wide(x), self._ensemble.tree_arrays, self._ensemble.linear_arrays,
                Z_CLIP, action,
            )  # fmt: skip
        self._errors.update(online, value, reward)
        if self._action_errors is not None:
            self._action_errors.update(action, online, value, reward)

    def _score_policies(
        self, x: FloatArray, online: FloatArray, action: int, reward: float, propensity: float
    ) -> None:
        """``policy_switch``: both models' errors as :meth:`_score` scores them, and the
        challengers' greedy policies against the blend's (its predictions the reward
        model), every action's prediction read once."""
        assert self._ensemble is not None and self._switch is not None
        wide = self._wide(x)
        if self._kernel is None:
            mean = self._ensemble.action_scores(wide)[0]
        else:
            mean = boosted_decide(
                self._kernel, wide, self._ensemble.tree_arrays, self._ensemble.linear_arrays,
                Z_CLIP, None, (1.0, 1.0), 0.0, None, 0.0, 0.0,
            )[3]  # fmt: skip
        blend = self._blend(mean, online)
        greedy = {"ensemble": int(np.argmax(mean)), "tree": int(np.argmax(online))}
        challengers = [greedy[name] for name in self._challengers]
        q = blend.tolist()
        self._switch.update(q, int(np.argmax(blend)), challengers, action, reward, propensity)
        played = (greedy["tree"] == action, greedy["ensemble"] == action)
        self._errors.update(float(online[action]), float(mean[action]), reward, played, propensity)
        if self._action_errors is not None:
            self._action_errors.update(action, float(online[action]), float(mean[action]), reward)

    def _score_rules(
        self, x: FloatArray, online: FloatArray, action: int, reward: float, propensity: float
    ) -> None:
        """``rule_switch``: both models' errors as :meth:`_score_policies` scores them,
        and each challenger rule's pmf against the explorer's over the blend (the pmf
        ``act`` serves while the blend decides), by their doubly robust values with the
        blend's predictions the reward model."""
        assert self._ensemble is not None and self._switch is not None
        wide = self._wide(x)
        if self._kernel is None:
            mean, var = self._ensemble.action_scores(wide)
            std = np.sqrt(var)
        else:
            _, _, _, mean, scores = boosted_decide(
                self._kernel, wide, self._ensemble.tree_arrays, self._ensemble.linear_arrays,
                Z_CLIP, None, (1.0, 1.0), 1.0, None, 0.0, 0.0,
            )  # fmt: skip
            std = scores - mean
        blend = self._blend(mean, online)
        k = self.n_actions
        served = blend + self._optimism() * std
        if self.options.bonus_shift:
            served = served - (float(served.max()) - float(blend.max()))
        if self.options.exploration == "ucb" or self._explorer is None:
            incumbent = np.eye(k)[int(np.argmax(served))]
        else:
            incumbent = self._explorer(served, self._explore_rounds)
        pmfs = []
        for name in self._challengers:
            if name == "ucb":
                ucb = mean + self.options.rule_optimism * std
                pmfs.append(np.eye(k)[int(np.argmax(ucb))])
            else:
                starter = cast(Any, self._starter)
                pmfs.append(np.asarray(starter.action_probabilities(x), dtype=np.float64))
        self._switch.update_pmfs(blend, incumbent, pmfs, action, reward, propensity)
        self._errors.update(float(online[action]), float(mean[action]), reward)
        if self._action_errors is not None:
            self._action_errors.update(action, float(online[action]), float(mean[action]), reward)

    def _restart(self) -> None:
        """After a detected change: forget the window, the ensemble and a fit under way.

        The tree decides alone until a fit ``first_fit`` rounds from now (this round is
        the window's first) has been scored on :data:`RESTART_MIN_ROUNDS` rounds.  The
        refit schedule and the explorer's count their rounds from here, as from a new
        model's first: fits come at ``first_fit`` x ``refit_growth``^k rounds after the
        change, not ``refit_growth`` times the rounds learned before it (one fit of 100
        rows would decide for 2,500 rounds after a change at round 10,000).
        """
        self._window = RoundWindow(self.options.window, self.n_features)
        self._ensemble = None
        self._pending_fit = None
        self._errors = ProgressiveErrors(self.options.compete_halflife, RESTART_MIN_ROUNDS)
        self._switch = self._new_switch()
        self._action_errors = self._new_action_errors()
        self._origin = self._n_learned
        self._next_fit = self._n_learned + self._first_event()
        self._through_rows = self._pending_through_rows = self._rows_total
        self._last_grow, self._warm_added = self._n_learned, 0

    def _first_event(self) -> int:
        """Rounds from a new model's first (or a restart) to its first fit: the base's
        alone with ``base_first_fit``, else the trees' at ``first_fit``."""
        base_first = self.options.base_first_fit
        return self.options.first_fit if base_first is None else base_first

    def _refit(self) -> None:
        """Fit the window and schedule the next fit.

        A window of fewer than ``BACKGROUND_ROWS`` rows is fitted here and used at once;
        a larger one on the fit worker, used after round :func:`~banditree.learners.
        boosted.refits.apply_round` (at most ``FIT_LAG`` rounds on, never after the
        next fit's round): the same round however fast the worker is.
        """
        n, since = self._n_learned, self._n_learned - self._origin
        grown = math.ceil(since * self.options.refit_growth)
        interval = min(grown - since, self.options.max_refit_interval)
        base_only = self._base_only
        if base_only:  # the trees' first fit comes at first_fit, as without the option
            interval = min(interval, self.options.first_fit - since)
        self._next_fit = n + max(1, interval)
        contexts, actions, rewards = self._window.rows()
        rows = (self._wide(contexts), actions, rewards)
        if base_only:  # a ridge solve per action: fitted here and used at once
            self._use(fit_base(*rows, self.n_actions, self.settings), self._rows_total)
            return
        settings = self.settings
        if self.options.rows_per_tree is not None:  # few rows: fewer trees
            trees = max(1, math.ceil(len(self._window) / self.options.rows_per_tree))
            settings = replace(settings, n_trees=min(settings.n_trees, trees))
        kernel = self._kernel
        route = None if kernel is None else partial(boosted_route, kernel)
        sums = None if kernel is None else partial(boosted_leaf_sums, kernel)
        if len(self._window) < BACKGROUND_ROWS:
            fitted = fit_ensemble(*rows, self.n_actions, settings, self.seed, route, sums)
            self._use(fitted, self._rows_total)
            return
        self._pending_through_rows = self._rows_total
        self._pending_fit = PendingFit.start(
            apply_round(n, self._next_fit), rows, self.n_actions, settings, self.seed, route,
            sums,
        )  # fmt: skip

    def _use(self, ensemble: FrozenBoostedEnsemble, through_rows: int) -> None:
        """Decide with a fitted ``ensemble`` from now on; its fit read the window rows
        appended before ``through_rows``."""
        self._ensemble = ensemble
        self._fits += 1
        self._through_rows = through_rows
        self._last_grow, self._warm_added = self._n_learned, 0
        if not self._compete:
            self._starter = None  # the ensemble decides from now on

    # -- state --------------------------------------------------------------------------
    def state(self) -> tuple[Tensors, dict[str, Any]]:
        tensors: Tensors = dict(self._window.tensors())
        if self._ensemble is not None:
            for name, value in self._ensemble.tensors().items():
                tensors[ENSEMBLE_PREFIX + name] = value
        if self._pending_fit is not None:  # waits for the worker: its result is state
            for name, value in self._pending_fit.result().tensors().items():
                tensors[PENDING_PREFIX + name] = value
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
            "origin": self._origin,
            "apply_at": None if self._pending_fit is None else self._pending_fit.apply_at,
            "rows": [
                self._rows_total,
                self._through_rows,
                self._pending_through_rows,
                self._last_grow,
                self._warm_added,
            ],
            "starter": starter_meta,
            "errors": self._errors.state(),
            "switch": None if self._switch is None else self._switch.state(),
            "action_errors": None if self._action_errors is None else self._action_errors.state(),
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
            FrozenBoostedEnsemble.from_tensors(ensemble, self._ensemble_features, self.n_actions)
            if ensemble
            else None
        )
        pending = {
            k[len(PENDING_PREFIX) :]: v for k, v in tensors.items() if k.startswith(PENDING_PREFIX)
        }
        apply_at = meta.get("apply_at")
        if (apply_at is None) != (not pending):
            raise ValueError("checkpoint holds a pending fit without its round, or the reverse")
        self._pending_fit = (
            None
            if apply_at is None
            else PendingFit(
                int(apply_at),
                done=FrozenBoostedEnsemble.from_tensors(
                    pending, self._ensemble_features, self.n_actions
                ),
            )
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
        switch = meta.get("switch")  # checkpoints before policy_switch: none
        if switch is not None:
            if self._switch is None:
                raise ValueError("checkpoint holds a policy switch this config does not build")
            self._switch.load(switch)
        else:
            self._switch = self._new_switch()  # not scored yet
        action_errors = meta.get("action_errors")  # checkpoints before blend_weights: none
        if action_errors is not None:
            if self._action_errors is None:
                raise ValueError("checkpoint holds per-action errors this config does not keep")
            self._action_errors.load(action_errors)
        else:
            self._action_errors = self._new_action_errors()
        self._version = int(meta["version"])
        self._fits = int(meta["fits"])
        self._next_fit = int(meta["next_fit"])
        self._origin = int(meta.get("origin", 0))  # checkpoints before restarts counted
        self._errors.min_rounds = RESTART_MIN_ROUNDS if self._origin else COMPETE_MIN_ROUNDS
        self._load_counter_state(meta)
        rows = meta.get("rows")  # checkpoints before warm starts: every row fitted
        if rows is None:
            rows = [len(self._window)] * 3 + [self._n_learned, 0]
        self._rows_total, self._through_rows, self._pending_through_rows = map(int, rows[:3])
        self._last_grow, self._warm_added = int(rows[3]), int(rows[4])

    def export_model(self) -> dict[str, Any]:
        """The served ensemble's shape (its arrays are in the checkpoint), with the
        online tree the decisions blend it with (:mod:`~banditree.learners.boosted.readable`)."""
        ensemble = self._ensemble
        return {
            "kind": "boosted",
            "fits": self._fits,
            "n_trees": 0 if ensemble is None else ensemble.n_trees,
            "depth": self.settings.depth,
            "window_rounds": len(self._window),
            **self.readable_export(),
        }
