"""Ranking over candidate actions described by features (``cb_explore_adf``'s setting).

Each round brings a context vector and a changing list of candidates, each with its own
feature vector.  A candidate's predicted reward is

    score(c, a) = w . phi(c, a) + n / (n + id_ramp) * tree(c, a)

* ``phi(c, a) = (c, a, c (x) a, 1)``: the standardised context, the candidate's
  features and every context x candidate cross (what VW's ``-q ca`` adds), fitted by
  one online ridge regression of the played candidate's reward (exact recursive least
  squares, :class:`~banditree.learners.ridge.PerActionRidge` with one "action");
* ``tree``: a DGT hard oblique tree over the joint ``(c, a)`` with a scalar leaf, learning
  the ridge's residual by RMSprop (the classification default's split: the ridge gives
  the first-order fit from the first rounds, the tree the interactions the crosses miss).

The tree's term is ramped in per candidate id: ``n`` counts the plays of the id (hashed
into :data:`ID_BUCKETS` counters, CRC-32, the same in every process), so an id never
played is scored by the ridge alone, which generalises from features, and the tree's
correction, learned on the ids played, applies in full to ids played often
(``id_ramp`` 5, measured by ``benchmarks.ranking_vs_vw``: better cold-start reward in the
first rounds of new ids and a lower geometric-mean loss ratio to VW than the tree on
every candidate, ``id_ramp`` 0).  Nothing else is kept per id: a candidate never seen
before is scored from its features alone (cold start).  Exploration is the FastCB / SquareCB family over the
request's candidates; the sampling uniform is fixed by the event id, as for the other
learners, so an event always gets the same decision.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from banditree.core import FloatArray
from banditree.explore import event_uniforms, explore_list, make_explorer, sample_action
from banditree.learners.optim import RMSprop
from banditree.learners.ridge import PerActionRidge
from banditree.learners.standardize import RunningStandardizer
from banditree.models.dgt.spec import DGTSpec
from banditree.ranking.records import RankDecision
from banditree.ranking.settings import (
    ID_BUCKETS,
    MAX_CANDIDATES,
    RIDGE_DEFER,
    RankingConfig,
    check_candidates,
    id_buckets,
)

#: the ridge's checkpoint tensors (``pending``: the rounds not folded into ``inv_gram``
#: yet, absent from checkpoints made before the deferred update)
RIDGE_ARRAYS = ("inv_gram", "weights", "mix_stats", "prior", "pending", "pending_rounds")
_SINCE_DEFER = ("pending", "pending_rounds")


class RankingLearner:
    """Scores candidates from (context, candidate features), explores, learns the reward.

    Examples
    --------
    >>> import numpy as np
    >>> learner = RankingLearner(RankingConfig(n_context_features=2, n_action_features=1))
    >>> d = learner.rank(np.array([0.5, -1.0]), np.array([[1.0], [0.0], [2.0]]), ["a", "b", "c"])
    >>> len(d.probabilities), round(sum(d.probabilities), 12)
    (3, 1.0)
    >>> learner.learn(d, reward=1.0)
    True
    """

    def __init__(self, config: RankingConfig) -> None:
        self.config = config
        dc, da = config.n_context_features, config.n_action_features
        self._dc, self._da = dc, da
        self._joint = dc + da
        n_phi = self._joint + (dc * da if config.crosses else 0)
        self._ridge = PerActionRidge(1, n_phi, l2=config.ridge_l2, defer=RIDGE_DEFER)
        self._context_stats = RunningStandardizer(max(dc, 1))
        self._action_stats = RunningStandardizer(max(da, 1))
        self._explorer = make_explorer(config.explorer, config.gamma_scale, config.gamma_exponent)
        self._spec = DGTSpec(self._joint, 1, height=config.height, shared_bias=True)
        self._rng = np.random.default_rng(config.seed)
        self.params = self._spec.init_params(self._rng) if config.tree else {}
        self._frozen = self._spec.freeze(self.params) if config.tree else None
        self._optim = RMSprop(lr=config.learning_rate)
        self._id_plays = np.zeros(ID_BUCKETS if config.id_ramp > 0 else 0)
        self.n_learned = 0
        self.n_decisions = 0
        self.version = 0

    # -- features -------------------------------------------------------------
    def _standardize(
        self, context: FloatArray, actions: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        clip = self.config.context_clip
        c = np.clip(self._context_stats.transform(context), -clip, clip) if self._dc else context
        a = np.clip(self._action_stats.transform(actions), -clip, clip) if self._da else actions
        return c, a

    def _features(self, c: FloatArray, a: FloatArray) -> tuple[FloatArray, FloatArray]:
        """``(joint (n, dc + da), phi (n, n_phi))`` for every candidate row of ``a``."""
        n = a.shape[0]
        joint = np.concatenate((np.broadcast_to(c, (n, self._dc)), a), axis=1)
        if not self.config.crosses or not (self._dc and self._da):
            return joint, joint
        crosses = (a[:, :, None] * c[None, None, :]).reshape(n, -1)
        return joint, np.concatenate((joint, crosses), axis=1)

    def _id_weights(self, ids: Sequence[str] | None) -> FloatArray | None:
        """The tree's weight per candidate, ``n / (n + id_ramp)`` of its id's plays
        (None: 1 for every candidate)."""
        if ids is None or not self._id_plays.size:
            return None
        plays = self._id_plays[id_buckets(ids)]
        weights: FloatArray = plays / (plays + self.config.id_ramp)
        return weights

    def scores(
        self, context: FloatArray, actions: FloatArray, ids: Sequence[str] | None = None
    ) -> FloatArray:
        """Predicted reward of every candidate ``(n,)``; with the candidates' ``ids`` and
        an ``id_ramp``, the tree's term is scaled by how often each id was played."""
        c, a = self._standardize(context, actions)
        joint, phi = self._features(c, a)
        w = self._ridge.weights[0]
        out: FloatArray = phi @ w[:-1] + w[-1]
        if self._frozen is not None:
            tree = self._spec.forward_batch(self._frozen, joint)[:, 0]
            weights = self._id_weights(ids)
            out = out + (tree if weights is None else weights * tree)
        return out

    # -- deciding -------------------------------------------------------------
    def rank(
        self,
        context: Sequence[float] | FloatArray,
        actions: Sequence[Sequence[float]] | FloatArray,
        action_ids: Sequence[str],
        event_id: str | None = None,
        *,
        uniform: float | None = None,
    ) -> RankDecision:
        """Choose one of the candidates; the decision holds every candidate's probability.

        ``uniform`` (in ``[0, 1)``) samples the choice instead of the event id's uniform
        (a simulation's shared uniforms)."""
        n = len(action_ids)
        c = np.asarray(context, dtype=np.float64).reshape(-1)
        a = np.asarray(actions, dtype=np.float64).reshape(n, -1) if n else np.empty((0, self._da))
        check_candidates(c, a, action_ids, self._dc, self._da)
        eid = event_id if event_id is not None else secrets.token_hex(16)
        chosen, pmf, greedy = self.choose(c, a, eid, action_ids, uniform=uniform)
        return RankDecision(
            event_id=eid,
            context=tuple(c.tolist()),
            action_ids=tuple(action_ids),
            action_features=tuple(tuple(row) for row in a.tolist()),
            chosen=chosen,
            probabilities=tuple(pmf),
            greedy=greedy,
            model_version=self.version,
        )

    def set_explorer(self, name: str, scale: float | None, exponent: float | None) -> None:
        """Explore with ``name`` from now on (``ValueError`` for a bad setting)."""
        self._explorer = make_explorer(name, scale, exponent)
        self.config = replace(
            self.config, explorer=name, gamma_scale=scale, gamma_exponent=exponent
        )

    def choose(
        self,
        context: FloatArray,
        actions: FloatArray,
        event_id: str,
        ids: Sequence[str] | None = None,
        *,
        uniform: float | None = None,
    ) -> tuple[int, list[float], int]:
        """``(chosen, pmf, greedy)`` for checked arrays (:meth:`rank` without its record)."""
        return self.pick(self.scores(context, actions, ids), event_id, uniform=uniform)

    def pick(
        self, s: FloatArray, event_id: str, *, uniform: float | None = None
    ) -> tuple[int, list[float], int]:
        """``(chosen, pmf, greedy)`` from the candidates' scores ``s`` (:meth:`scores`);
        the pmf as Python floats (worked out on them for up to 32 candidates)."""
        pmf, greedy = explore_list(self._explorer, s, self.n_learned)
        if uniform is None:
            uniform = event_uniforms(self.config.seed, event_id)[0]
        chosen = sample_action(pmf, uniform)
        self.n_decisions += 1
        return chosen, pmf, greedy

    # -- learning -------------------------------------------------------------
    def learn(self, decision: RankDecision, reward: float) -> bool:
        """Learn the chosen candidate's ``reward`` (in ``[0, 1]``, higher is better)."""
        if not math.isfinite(reward):
            raise ValueError(f"reward must be finite, got {reward}")
        c = np.asarray(decision.context, dtype=np.float64)
        a_all = np.asarray(decision.action_features, dtype=np.float64).reshape(
            len(decision.action_ids), -1
        )
        return self.learn_arrays(c, a_all, decision.chosen, reward, decision.action_ids)

    def learn_arrays(
        self,
        c: FloatArray,
        a_all: FloatArray,
        chosen: int,
        reward: float,
        ids: Sequence[str] | None = None,
    ) -> bool:
        """:meth:`learn` of a decision held as arrays: the context ``(dc,)``, every
        candidate's features ``(n, da)`` and the chosen candidate's index (``ids``: the
        candidates' ids, counted for the tree's ramp)."""
        if not math.isfinite(reward):
            raise ValueError(f"reward must be finite, got {reward}")
        reward = min(max(float(reward), -1.0), 1.0)
        if self._dc:
            self._context_stats.update(c)
        if self._da:
            self._action_stats.update_rows(a_all)
        cs, as_ = self._standardize(c, a_all[chosen : chosen + 1])
        joint, phi = self._features(cs, as_)
        self._ridge.update(phi[0], 0, reward)
        if self._frozen is not None:
            w = self._ridge.weights[0]
            linear = float(phi[0] @ w[:-1] + w[-1])

            def upstream(out: FloatArray) -> FloatArray:
                return 2.0 * (out + linear - reward)

            grads = self._spec.gradients_batch(self.params, joint, [upstream], self._rng)
            if all(np.isfinite(g).all() for g in grads.values()):
                self.params = self._optim.step(self.params, grads)
                self._frozen = self._spec.freeze(self.params)
        if ids is not None and self._id_plays.size:
            self._id_plays[id_buckets([ids[chosen]])] += 1.0
        self.n_learned += 1
        self.version += 1
        return True

    def state(self) -> dict[str, Any]:
        """Counters for inspection."""
        return {
            "n_learned": self.n_learned,
            "n_decisions": self.n_decisions,
            "version": self.version,
        }

    def state_tensors(self) -> tuple[dict[str, FloatArray], dict[str, Any]]:
        """Tensors and JSON metadata that restore this learner exactly (:meth:`load_state_tensors`)."""
        tensors: dict[str, FloatArray] = {f"param.{k}": v for k, v in self.params.items()}
        tensors.update({f"optim.{k}": v for k, v in self._optim.state_tensors().items()})
        ridge = self._ridge
        for key in RIDGE_ARRAYS:
            tensors[f"ridge.{key}"] = getattr(ridge, key)
        if self._id_plays.size:
            tensors["id_plays"] = self._id_plays
        for prefix, stats in (
            ("std_context", self._context_stats),
            ("std_action", self._action_stats),
        ):
            tensors[f"{prefix}.mean"] = stats.mean
            tensors[f"{prefix}.m2"] = stats.m2
        meta = {
            **self.state(),
            "std_counts": [self._context_stats.count, self._action_stats.count],
            "rng": self._rng.bit_generator.state,
        }
        return {k: np.array(v, dtype=np.float64) for k, v in tensors.items()}, meta

    def load_state_tensors(self, tensors: dict[str, FloatArray], meta: dict[str, Any]) -> None:
        """Restore :meth:`state_tensors` output into a learner of the same config."""

        def group(prefix: str) -> dict[str, FloatArray]:
            return {
                k[len(prefix) :]: np.array(v, dtype=np.float64)
                for k, v in tensors.items()
                if k.startswith(prefix)
            }

        params = group("param.")
        if set(params) != set(self.params) or any(
            params[k].shape != self.params[k].shape for k in self.params
        ):
            raise ValueError("checkpoint parameters do not match the ranking configuration")
        arrays = [*params.values(), *group("ridge.").values(), *group("std_").values()]
        if not all(np.isfinite(a).all() for a in arrays):
            raise ValueError("checkpoint holds non-finite values")
        ridge = self._ridge
        values = {}
        for key in RIDGE_ARRAYS:
            name = f"ridge.{key}"
            if key in _SINCE_DEFER and name not in tensors:  # every round folded in
                values[key] = np.zeros_like(getattr(ridge, key))
            else:
                values[key] = np.array(tensors[name], dtype=np.float64)
            if values[key].shape != getattr(ridge, key).shape:
                raise ValueError(f"checkpoint {name} does not match the configuration")
        kept = values["pending_rounds"]
        if not np.isin(kept, np.arange(ridge.defer)).all():
            raise ValueError("checkpoint ridge.pending_rounds does not match the configuration")
        for key, value in values.items():
            setattr(ridge, key, value)
        if self._id_plays.size:
            plays = np.array(tensors.get("id_plays", self._id_plays * 0), dtype=np.float64)
            if plays.shape != self._id_plays.shape or not np.isfinite(plays).all():
                raise ValueError("checkpoint id_plays does not match the configuration")
            self._id_plays = plays
        counts = meta["std_counts"]
        for prefix, stats, count in (
            ("std_context", self._context_stats, counts[0]),
            ("std_action", self._action_stats, counts[1]),
        ):
            for key in ("mean", "m2"):
                value = np.array(tensors[f"{prefix}.{key}"], dtype=np.float64)
                if value.shape != (stats.n_features,):
                    raise ValueError(f"checkpoint {prefix}.{key} does not match the configuration")
                setattr(stats, key, value)
            stats.count = int(count)
        self.params = params
        self._frozen = self._spec.freeze(params) if self.config.tree else None
        self._optim.load_state_tensors(group("optim."))
        self._rng.bit_generator.state = meta["rng"]
        self.n_learned = int(meta["n_learned"])
        self.n_decisions = int(meta["n_decisions"])
        self.version = int(meta["version"])


__all__ = ["ID_BUCKETS", "MAX_CANDIDATES", "RankingConfig", "RankingLearner", "check_candidates"]
