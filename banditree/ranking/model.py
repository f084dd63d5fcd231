"""A ranking model as a :class:`~banditree.learners.Learner`: JSON features in, decisions
that carry the whole candidate set out.

The context and each candidate's features are JSON objects of named features (or lists
of such objects, merged: Personalizer's ``contextFeatures``); two
:class:`~banditree.features.FeatureEncoder` turn them into the vectors the
:class:`~banditree.ranking.learner.RankingLearner` scores.  Their schemas are declared in
the config's ``options`` or inferred from the first decision learned from (log order:
every replica and every replay infers the same); until then decisions are uniform over
the candidates.

A decision's ``ranking`` field holds, as JSON::

    {"context": {...}, "ids": ["a", "b"], "features": [{...}, {...}],
     "probabilities": [0.7, 0.3], "excluded": ["c"], "active": false, "slot": "s1"}

``excluded`` (ids the caller excluded, probability 0), ``active`` (false while a deferred
event waits for its activation; absent when active) and ``slot`` (a multi-slot decision's
slot id) appear only when set.  ``action`` indexes the candidate played, ``propensity``
is its probability, ``greedy_action`` the model's best candidate.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from banditree.core import Decision, DecisionColumns, Feedback
from banditree.explore import event_uniforms, make_explorer, sample_action
from banditree.features import FeatureEncoder, FeatureSchema, InvalidInput
from banditree.kernel import native
from banditree.learners.apprentice import AgreementTracker, Mode, check_mode
from banditree.learners.base import Learner, Tensors
from banditree.learners.config import LearnerConfig
from banditree.learners.ranking_options import AUTO_CROSS_FEATURES, MAX_SIDE_WIDTH
from banditree.ranking.apprentice import play_baseline
from banditree.ranking.inputs import (
    as_features,
    check_actions,
    check_before_schema,
    infer_or_none,
    learn_encoders,
)
from banditree.ranking.learner import MAX_CANDIDATES, RankingConfig, RankingLearner
from banditree.ranking.model_state import export_ranking, load_ranking_state, ranking_state
from banditree.ranking.served import ServedScorer

#: a reward is in [-1, 1] (Personalizer's range), so a loss (1 - reward) is in [0, 2]
LOSS_BOUNDS = (0.0, 2.0)


class RankingModel(Learner):
    """Ranks candidate actions described by features; learns the played one's reward."""

    task = "ranking"

    def __init__(self, config: LearnerConfig) -> None:
        self._config = config.model_dump(mode="json")
        self.options = config.ranking_options()
        self.n_features, self.n_actions, self.seed = 1, MAX_CANDIDATES, config.seed
        self._height = config.height if config.height is not None else 4
        self._learning_rate = config.learning_rate or 3e-3
        self._explorer: tuple[str, float | None, float | None] = (
            config.explorer,
            config.explorer_parameter,
            config.explorer_exponent,
        )
        self.context_encoder: FeatureEncoder | None = None
        self.action_encoder: FeatureEncoder | None = None
        self.core: RankingLearner | None = None
        self._scorer: ServedScorer | None = None  # of the current state, made when ranking
        # the compiled kernel decides (None: the numpy reference, BANDITREE_KERNEL=reference);
        # raises KernelUnavailable when it was asked for and does not import
        self._kernel = native()
        # created in apprentice mode: the baseline is played until switched to online
        self.apprentice_created = config.mode == "apprentice"
        self._mode: Mode = config.mode
        self._agreement = AgreementTracker() if self.apprentice_created else None
        declared = (self.options.context_features, self.options.action_features)
        if declared[0] is not None and declared[1] is not None:
            self._setup(*declared)

    # -- the schemas ------------------------------------------------------------------
    def _setup(self, context: FeatureSchema | None, action: FeatureSchema | None) -> None:
        dc = 0 if context is None else context.width
        da = 0 if action is None else action.width
        for side, width in (("context", dc), ("actions", da)):
            if width > MAX_SIDE_WIDTH:
                raise InvalidInput(side, f"{width} encoded columns, more than {MAX_SIDE_WIDTH}")
        crosses = self.options.crosses
        if crosses is None:
            crosses = dc + da + dc * da <= AUTO_CROSS_FEATURES
        explorer, scale, exponent = self._explorer
        self.core = RankingLearner(
            RankingConfig(
                n_context_features=dc, n_action_features=da, height=self._height,
                learning_rate=self._learning_rate, explorer=explorer, gamma_scale=scale,
                gamma_exponent=exponent, ridge_l2=self.options.ridge_l2, crosses=crosses,
                tree=self.options.tree, context_clip=self.options.context_clip,
                id_ramp=self.options.id_ramp, seed=self.seed,
            )
        )  # fmt: skip
        self.context_encoder = None if context is None else FeatureEncoder(context)
        self.action_encoder = None if action is None else FeatureEncoder(action)
        self._scorer = None

    def _infer_schemas(
        self, context: Mapping[str, Any], features: Sequence[Mapping[str, Any]]
    ) -> None:
        k = self.options.max_categories
        ctx = self.options.context_features or infer_or_none([context], k)
        act = self.options.action_features or infer_or_none(features, k)
        if ctx is None and act is None:
            raise InvalidInput("context", "neither the context nor the candidates name a feature")
        self._setup(ctx, act)

    # -- deciding ---------------------------------------------------------------------
    def rank(
        self,
        context: Any,
        actions: Sequence[tuple[str, Any]],
        event_id: str | None = None,
        *,
        excluded: Sequence[str] = (),
        active: bool = True,
        slot: str | None = None,
        uniform: float | None = None,
        baseline: str | None = None,
    ) -> Decision:
        """Choose one of ``actions`` (``(id, features)``) not in ``excluded``; ``uniform``
        (in ``[0, 1)``) samples the choice instead of the event id's uniform.  In
        apprentice mode the ``baseline`` candidate is played (else the first one not
        excluded: :func:`~banditree.ranking.apprentice.play_baseline`).

        Raises :class:`InvalidInput` naming the field: 1 to :data:`MAX_CANDIDATES`
        candidates, unique non-empty ids, features as objects, at least one candidate
        left after the exclusions.
        """
        if uniform is not None and not 0.0 <= uniform < 1.0:  # NaN too
            raise InvalidInput("uniform", f"must be in [0, 1), got {uniform!r}")
        ctx = as_features(context, "context")
        ids, features = check_actions(actions)
        excluded_set = set(excluded)
        if excluded_set:
            keep = [i for i, a in enumerate(ids) if a not in excluded_set]
            if not keep:
                raise InvalidInput(
                    "excluded_actions", "excludes every candidate: none is left to rank"
                )
            ids = [ids[i] for i in keep]
            features = [features[i] for i in keep]
        eid = self._next_event_id(event_id)
        extras: dict[str, float] = {}
        served = None if self.core is None else self._served()
        if served is None:  # no schema yet: uniform; refused now what inference would
            check_before_schema(ctx, features, self.options.max_categories)
            if self._mode == "apprentice":
                chosen, probabilities, greedy, extras = play_baseline(ids, baseline, None)
            else:
                n = len(ids)
                pmf = np.full(n, 1.0 / n)
                u = event_uniforms(self.seed, eid)[0] if uniform is None else uniform
                chosen = sample_action(pmf, u)
                probabilities, greedy = [float(p) for p in pmf], 0
        elif self._mode == "apprentice":
            scores = served.scores(ctx, ids, features)
            chosen, probabilities, greedy, extras = play_baseline(ids, baseline, scores)
        elif served.kernel is not None:  # one kernel call: scores, pmf and the draw
            chosen, probabilities, greedy = served.decide(ctx, ids, features, eid, uniform)
        else:  # the numpy reference (BANDITREE_KERNEL=reference)
            assert self.core is not None
            scores = served.scores(ctx, ids, features)
            chosen, probabilities, greedy = self.core.pick(scores, eid, uniform=uniform)
        ranking: dict[str, Any] = {
            "context": ctx,
            "ids": ids,
            "features": features,
            "probabilities": probabilities,
        }
        if excluded_set:
            ranking["excluded"] = [a for a in dict.fromkeys(excluded) if a in excluded_set]
        if not active:
            ranking["active"] = False
        if slot is not None:
            ranking["slot"] = slot
        return Decision(
            event_id=eid, context=(), model_version=self.version, action=chosen,
            propensity=probabilities[chosen], greedy_action=greedy,
            explored=chosen != greedy and not extras, ranking=ranking, extras=extras,
        )  # fmt: skip

    def _served(self) -> ServedScorer:
        """The scorer of the current state (made again after a learn or a load): what
        recurs from call to call, such as a catalogue's candidates, is worked out once."""
        if self._scorer is None:
            assert self.core is not None
            self._scorer = ServedScorer(
                self.core, self.context_encoder, self.action_encoder, self._kernel
            )
        return self._scorer

    def use_reference(self) -> None:
        """Decide on the numpy reference from now on, as ``BANDITREE_KERNEL=reference``
        does (the kernel's tests and benchmarks compare both paths in one process)."""
        self._kernel = None
        self._scorer = None

    def _encode(
        self, context: Mapping[str, Any], features: Sequence[Mapping[str, Any]], served: bool
    ) -> tuple[np.ndarray, np.ndarray]:
        """The encoded context and candidates (``served``: by the published encoders)."""
        n = len(features)
        c = (
            np.zeros(0)
            if self.context_encoder is None
            else self.context_encoder.encode(context, served, "context")
        )
        if self.action_encoder is None:
            return c, np.zeros((n, 0))
        enc = self.action_encoder
        rows = [enc.encode(f, served, f"actions[{i}].features") for i, f in enumerate(features)]
        return c, np.stack(rows)

    def scores(
        self, context: Any, features: Sequence[Any], ids: Sequence[str] | None = None
    ) -> np.ndarray:
        """The predicted reward of every candidate (its ``features``; ``ids``: their ids,
        for the tree's per-id ramp) for ``context`` (0 for all while the model has no
        schema)."""
        if self.core is None:
            return np.zeros(len(features))
        objects = [as_features(f, f"actions[{i}].features") for i, f in enumerate(features)]
        c, a = self._encode(as_features(context, "context"), objects, served=True)
        return self.core.scores(c, a, ids)

    def act(self, context: Any, event_id: str | None = None) -> Decision:
        raise InvalidInput("context", "a ranking model ranks candidates: use rank (POST .../rank)")

    def predict(self, contexts: Any) -> np.ndarray:
        raise InvalidInput("contexts", "a ranking model ranks candidates: use rank (POST .../rank)")

    def act_batch(self, contexts: Any, event_ids: Any = None) -> list[Decision]:
        # refused whatever the batch holds (an empty one included, which ``act`` never sees)
        raise InvalidInput("contexts", "a ranking model ranks candidates: use rank (POST .../rank)")

    def act_columns(self, contexts: Any, event_ids: Any = None) -> DecisionColumns:
        raise InvalidInput("contexts", "a ranking model ranks candidates: use rank (POST .../rank)")

    # -- learning ---------------------------------------------------------------------
    def check(self, decision: Decision, feedback: Feedback) -> None:
        """Refuse feedback for a non-ranking decision, a deferred decision not activated,
        or a loss outside ``[0, 2]`` (a reward outside ``[-1, 1]``)."""
        self._check_feedback(decision, feedback)
        assert decision.ranking is not None
        if not decision.ranking.get("active", True):
            raise InvalidInput("event_id", "was deferred and is not activated: activate it first")

    def _check_feedback(self, decision: Decision, feedback: Feedback) -> None:
        if decision.ranking is None or decision.action is None:
            raise InvalidInput("event_id", "the decision is not a ranking decision")
        if feedback.loss is None:
            raise InvalidInput("loss", "a ranking decision takes one loss (or reward)")
        lo, hi = LOSS_BOUNDS
        if not lo <= feedback.loss <= hi:
            raise InvalidInput(
                "loss", f"must be in [{lo}, {hi}] (a reward in [-1, 1]), got {feedback.loss}"
            )

    def learn(self, decision: Decision, feedback: Feedback) -> bool:
        """Learn the played candidate's reward (``1 - loss``); a deferred decision not
        activated is not learned from."""
        self._check_feedback(decision, feedback)
        ranking = decision.ranking
        assert ranking is not None and decision.action is not None and feedback.loss is not None
        if not ranking.get("active", True):
            return False
        context = as_features(ranking["context"], "decision.context")
        features = [
            as_features(f, f"decision.features[{i}]") for i, f in enumerate(ranking["features"])
        ]
        if self.core is None:
            self._infer_schemas(context, features)
        assert self.core is not None
        c, a = learn_encoders(self.context_encoder, self.action_encoder, context, features)
        changed = self.core.learn_arrays(c, a, decision.action, 1.0 - feedback.loss, ranking["ids"])
        for encoder in (self.context_encoder, self.action_encoder):
            if encoder is not None:
                encoder.publish()
        self._scorer = None
        if self._agreement is not None:
            self._agreement.learned(decision, feedback)
        self._count_feedback(feedback)
        return changed

    # -- apprentice mode ----------------------------------------------------------------
    @property
    def mode(self) -> Mode:
        """``apprentice`` (the baseline is played) or ``online``."""
        return self._mode

    def set_mode(self, mode: str) -> None:
        """Switch a model created in apprentice mode to ``online`` (or back); what it
        learned is kept."""
        mode = check_mode(mode)
        if self._agreement is None and mode == "apprentice":
            raise InvalidInput("mode", "this model was created online")
        self._mode = mode

    @property
    def explorer_settings(self) -> tuple[str, float | None, float | None]:
        """``(explorer, parameter, exponent)`` the model explores with now."""
        return self._explorer

    def check_explorer(
        self, explorer: str, parameter: float | None = None, exponent: float | None = None
    ) -> None:
        """``ValueError`` when the model cannot explore so (the config's and the explorer's
        own checks); nothing changes."""
        LearnerConfig.model_validate(
            {**self._config, "explorer": explorer, "explorer_parameter": parameter,
             "explorer_exponent": exponent}
        )  # fmt: skip
        make_explorer(explorer, parameter, exponent)

    def set_explorer(
        self, explorer: str, parameter: float | None = None, exponent: float | None = None
    ) -> None:
        """Explore with ``explorer`` from now on; what was learned is kept.

        Learner state, as the apprentice mode is: the config keeps the explorer the
        model was created with, a checkpoint holds this one.  ``ValueError`` (from the
        config's own checks) for a bad setting.
        """
        self.check_explorer(explorer, parameter, exponent)
        if self.core is not None:
            self.core.set_explorer(explorer, parameter, exponent)
        self._explorer = (explorer, parameter, exponent)
        self._scorer = None

    def agreement(self) -> dict[str, float | int | None]:
        """How often the model's own choice agrees with the baseline played, and both
        rewards as it estimates them (:meth:`AgreementTracker.report`)."""
        return (self._agreement or AgreementTracker()).report()

    # -- state ------------------------------------------------------------------------
    @property
    def version(self) -> int:
        return 0 if self.core is None else self.core.version

    def export_model(self) -> dict[str, Any]:
        return export_ranking(self)

    def state(self) -> tuple[Tensors, dict[str, Any]]:
        return ranking_state(self)

    def load_state(self, tensors: Tensors, meta: dict[str, Any]) -> None:
        load_ranking_state(self, tensors, meta)
