"""When an off-policy estimate is judged too thin to report (shared by ``evaluate`` and
``simulate --logged``)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray


@dataclass(frozen=True)
class SupportRules:
    """When the log is judged too thin to support a candidate's estimate."""

    min_effective_rounds: float = 30.0
    max_weight_share: float = 0.2


def support(
    weights: FloatArray, rules: SupportRules, reward: FloatArray | None = None
) -> tuple[float, float, list[str]]:
    """Effective rounds, the largest share of one round, and the reasons a claim is withheld.

    The share is one round's part of the summed weight and, with ``reward``, also of the
    summed ``|weight * reward|`` (the estimate itself): one rewarded round with a large
    weight carries an IPS estimate even when the weights alone look spread out.
    """
    total = float(weights.sum())
    squares = float(np.square(weights).sum())
    effective = total * total / squares if squares > 0 else 0.0
    share = float(weights.max() / total) if total > 0 else 1.0
    reasons = []
    if effective < rules.min_effective_rounds:
        reasons.append(
            f"too few matching rounds: {effective:.1f} effective rounds, "
            f"need at least {rules.min_effective_rounds:g}"
        )
    if share > rules.max_weight_share:
        reasons.append(
            f"propensities near zero: one round carries {share:.0%} of the importance "
            f"weight (more than {rules.max_weight_share:.0%})"
        )
    if reward is not None:
        weighted = np.abs(weights * reward)
        reward_total = float(weighted.sum())
        reward_share = float(weighted.max() / reward_total) if reward_total > 0 else 0.0
        if reward_share > rules.max_weight_share:
            reasons.append(
                f"one round carries {reward_share:.0%} of the weighted reward (more than "
                f"{rules.max_weight_share:.0%}): the estimate rests on a handful of events"
            )
        share = max(share, reward_share)
    return effective, share, reasons


def event_notes(weights: FloatArray, reward: FloatArray, rules: SupportRules) -> dict[str, Any]:
    """How many rounds the estimate rests on: ``events`` (rounds with a nonzero weighted
    reward) and, below ``min_effective_rounds`` of them, a note that says so."""
    events = int(np.count_nonzero(weights * reward))
    out: dict[str, Any] = {"events": events, "few_events": events < rules.min_effective_rounds}
    if out["few_events"]:
        out["interval_note"] = (
            f"the estimate and its interval rest on {events} rewarded rounds (fewer than "
            f"{rules.min_effective_rounds:g}): the bootstrap interval understates the "
            "uncertainty"
        )
    return out
