"""Assembling the decisions of a batch from one batched model pass (see ``act_batch``).

Each function returns, row for row, the :class:`~banditree.learners.records.Decision`
that the learner's ``act`` makes for the same context, event id and snapshot: the
model outputs come from one batched forward, the explorer's probabilities from one
call over every row, the actions from one vectorised inverse-CDF draw with the
uniforms of each event id.
"""

from __future__ import annotations

import numpy as np

from banditree.explore import Explorer, explore_rows, sample_actions
from banditree.learners.records import Decision
from banditree.models.dgt.tree_ops import FloatArray
from banditree.models.spec import BatchOutput


def _row_extras(out: BatchOutput, batch: int) -> list[dict[str, float]]:
    """One fresh extras mapping per row."""
    if not out.extras:
        return [{} for _ in range(batch)]
    names = list(out.extras)
    columns = [out.extras[name].tolist() for name in names]
    return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]


def classification_decisions(
    out: BatchOutput,
    contexts: FloatArray,
    event_ids: list[str],
    uniforms: FloatArray,
    *,
    version: int,
    explorer: Explorer,
    rounds_learned: int,
    sigmoid_link: bool,
) -> list[Decision]:
    """Explore on the predicted rewards of every row and sample each row's action."""
    scores = out.scores
    if scores is None:
        scores = 1.0 / (1.0 + np.exp(-out.output)) if sigmoid_link else out.output
    pmfs = explore_rows(explorer, scores, rounds_learned)
    actions = sample_actions(pmfs, uniforms[:, 0])
    propensities = pmfs[np.arange(actions.shape[0]), actions].tolist()
    greedy = scores.argmax(axis=1).tolist()
    leaves = [None] * len(event_ids) if out.leaf is None else out.leaf.tolist()
    extras = _row_extras(out, len(event_ids))
    return [
        Decision(
            event_id,
            tuple(context),
            version,
            action=action,
            propensity=propensity,
            greedy_action=best,
            leaf=leaf,
            explored=action != best,
            extras=extra,
        )
        for event_id, context, action, propensity, best, leaf, extra in zip(
            event_ids,
            contexts.tolist(),
            actions.tolist(),
            propensities,
            greedy,
            leaves,
            extras,
            strict=True,
        )
    ]


def regression_decisions(
    out: BatchOutput,
    contexts: FloatArray,
    event_ids: list[str],
    uniforms: FloatArray,
    *,
    version: int,
    target_offset: float,
    target_scale: float,
    one_point_delta: float | None,
    two_point_delta: float | None,
) -> list[Decision]:
    """The played value of every row: greedy, one-point perturbed or a two-point query."""
    leaves = [None] * len(event_ids) if out.leaf is None else out.leaf.tolist()
    extras = _row_extras(out, len(event_ids))
    decisions = []
    for event_id, context, output, u_sign, leaf, extra in zip(
        event_ids,
        contexts.tolist(),
        out.output[:, 0].tolist(),
        uniforms[:, 1].tolist(),
        leaves,
        extras,
        strict=True,
    ):
        y_hat = target_offset + target_scale * output
        value, perturbation, probes = y_hat, 0, None
        if one_point_delta is not None:
            perturbation = 1 if u_sign < 0.5 else -1
            value = y_hat + one_point_delta * perturbation
        elif two_point_delta is not None:
            probes = (y_hat + two_point_delta, y_hat - two_point_delta)
        decisions.append(
            Decision(
                event_id,
                tuple(context),
                version,
                value=value,
                greedy_value=y_hat,
                perturbation=perturbation,
                probes=probes,
                leaf=leaf,
                explored=perturbation != 0 or probes is not None,
                extras=extra,
            )
        )
    return decisions
