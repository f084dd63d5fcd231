"""Assembling the decisions of a batch from one batched model pass (see ``act_batch``).

Each function returns the columns (:class:`~banditree.core.columns.DecisionColumns`)
of the decisions that the learner's ``act`` makes, row for row, for the same contexts,
event ids and snapshot: the model outputs come from one batched forward, the explorer's
probabilities from one call over every row, the actions from one vectorised
inverse-CDF draw with the uniforms of each event id.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.core.columns import DecisionColumns, FloatRows
from banditree.explore import Explorer, explore_rows, sample_actions
from banditree.models.spec import BatchOutput


def _extras(out: BatchOutput) -> dict[str, list[float]] | None:
    return {name: column.tolist() for name, column in out.extras.items()} or None


def context_rows(contexts: FloatArray, given: object) -> list[Any]:
    """The decisions' contexts: ``given`` when it is :class:`FloatRows` (the floats of
    ``contexts`` already), else ``contexts`` written out as lists."""
    return given if isinstance(given, FloatRows) else contexts.tolist()


def classification_columns(
    out: BatchOutput,
    contexts: FloatArray,
    event_ids: list[str],
    uniforms: FloatArray,
    *,
    version: int,
    explorer: Explorer,
    rounds_learned: int,
    sigmoid_link: bool,
    given: object = None,
) -> DecisionColumns:
    """Explore on the predicted rewards of every row and sample each row's action."""
    scores = out.scores
    if scores is None:
        scores = 1.0 / (1.0 + np.exp(-out.output)) if sigmoid_link else out.output
    pmfs = explore_rows(explorer, scores, rounds_learned)
    chosen = sample_actions(pmfs, uniforms[:, 0])
    greedy = scores.argmax(axis=1)
    return DecisionColumns(
        event_ids=event_ids,
        contexts=context_rows(contexts, given),
        model_version=version,
        explored=(chosen != greedy).tolist(),
        action=chosen.tolist(),
        propensity=pmfs[np.arange(chosen.shape[0]), chosen].tolist(),
        greedy_action=greedy.tolist(),
        perturbation=[0] * len(event_ids),
        leaf=None if out.leaf is None else out.leaf.tolist(),
        extras=_extras(out),
        context_array=contexts,
    )


def regression_columns(
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
    given: object = None,
) -> DecisionColumns:
    """The played value of every row: greedy, one-point perturbed or a two-point query."""
    greedy = [target_offset + target_scale * output for output in out.output[:, 0].tolist()]
    n = len(event_ids)
    values, perturbations, probes = greedy, [0] * n, None
    if one_point_delta is not None:
        perturbations = [1 if u_sign < 0.5 else -1 for u_sign in uniforms[:, 1].tolist()]
        values = [
            y_hat + one_point_delta * sign
            for y_hat, sign in zip(greedy, perturbations, strict=True)
        ]
    elif two_point_delta is not None:
        probes = [(y_hat + two_point_delta, y_hat - two_point_delta) for y_hat in greedy]
    return DecisionColumns(
        event_ids=event_ids,
        contexts=context_rows(contexts, given),
        model_version=version,
        explored=[one_point_delta is not None or two_point_delta is not None] * n,
        value=values,
        greedy_value=greedy,
        perturbation=perturbations,
        probes=probes,
        leaf=None if out.leaf is None else out.leaf.tolist(),
        extras=_extras(out),
    )
