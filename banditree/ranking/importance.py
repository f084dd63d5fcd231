"""How much each feature moves a ranking model's predictions (one computation, used by the
service's Personalizer feature importances and meant for the console's Features page).

A feature's importance is the mean absolute change of the model's predicted reward of a
candidate when that feature is left out (as a missing value), over every candidate of
the given log rows: 0 for a feature the model ignores, larger the more its predictions
lean on it.  Features are those of the model's schemas (context and candidate sides).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from banditree.features.schema import flatten_context
from banditree.ranking.inputs import as_features
from banditree.ranking.model import RankingModel


@dataclass(frozen=True)
class FeatureScore:
    """One feature's importance: its ``side`` (``context`` or ``action``), its flat name
    (``user.diet``) and the mean absolute change of a predicted reward without it."""

    side: str
    name: str
    score: float

    @property
    def namespace(self) -> str:
        """The name's namespaces (``user`` of ``user.diet``; empty for a top-level one)."""
        return self.name.rpartition(".")[0]

    @property
    def feature(self) -> str:
        """The name without its namespaces (``diet`` of ``user.diet``)."""
        return self.name.rpartition(".")[2]


def _without(features: Mapping[str, Any], name: str) -> dict[str, Any]:
    return {k: v for k, v in features.items() if k != name}


def feature_importance(
    model: RankingModel, rows: Iterable[Mapping[str, Any]], *, max_rows: int = 2000
) -> list[FeatureScore]:
    """The importance of every feature of ``model`` over ``rows`` (wire-form log rows with
    a ``ranking`` candidate set; the last ``max_rows`` of them), most important first.

    A model with no schema yet (it has learned nothing) has no features: the answer is
    empty.  Raises ``ValueError`` for a row that is not a ranking row.

    Examples
    --------
    >>> from banditree.learners import LearnerConfig, build_learner
    >>> from banditree.core import Feedback
    >>> model = build_learner(LearnerConfig.model_validate({"task": "ranking"}))
    >>> actions = [("a", {"kind": "x"}), ("b", {"kind": "y"})]
    >>> for t in range(60):
    ...     d = model.rank({"hour": t % 2, "noise": 1.0}, actions, f"e{t}")
    ...     won = (d.action == t % 2)
    ...     _ = model.learn(d, Feedback(loss=0.0 if won else 1.0))
    >>> rows = [{"ranking": {"context": {"hour": h, "noise": 1.0}, "ids": ["a", "b"],
    ...          "features": [{"kind": "x"}, {"kind": "y"}]}} for h in (0, 1)]
    >>> scores = feature_importance(model, rows)  # the constant "noise" matters least
    >>> [(s.side, s.name) for s in scores][-1], scores[-1].score < scores[0].score / 10
    (('context', 'noise'), True)
    """
    kept: list[Mapping[str, Any]] = []
    for row in rows:
        if not isinstance(row.get("ranking"), Mapping):
            raise ValueError(f"row offset {row.get('offset')}: not a ranking row")
        kept.append(row["ranking"])
    kept = kept[-max_rows:] if max_rows > 0 else []
    context_names = [] if model.context_encoder is None else model.context_encoder.schema.features
    action_names = [] if model.action_encoder is None else model.action_encoder.schema.features
    totals = {("context", n): 0.0 for n in context_names}
    totals |= {("action", n): 0.0 for n in action_names}
    count = 0
    for ranking in kept:
        context = dict(flatten_context(as_features(ranking.get("context"), "context")))
        ids = list(ranking["ids"])
        features = [dict(flatten_context(as_features(f, "features"))) for f in ranking["features"]]
        base = model.scores(context, features, ids)
        for name in context_names:
            changed = model.scores(_without(context, name), features, ids)
            totals["context", name] += float(np.abs(changed - base).sum())
        for name in action_names:
            changed = model.scores(context, [_without(f, name) for f in features], ids)
            totals["action", name] += float(np.abs(changed - base).sum())
        count += len(ids)
    scores = [
        FeatureScore(side, name, total / count if count else 0.0)
        for (side, name), total in totals.items()
    ]
    return sorted(scores, key=lambda s: (-s.score, s.side, s.name))
