"""Apprentice mode for ranking: the baseline candidate is played while the model learns.

As Personalizer's apprentice mode: each rank plays its baseline action (the slot's
``baselineAction``, else the first candidate not excluded) with probability 1, so its
reward is an on-policy sample of the baseline; the model learns from it, and its own
greedy choice and both reward estimates are recorded in the decision, so the agreement
figures (:class:`~banditree.learners.apprentice.AgreementTracker`) show when it has
learned enough to rank online (``PATCH {"mode": "online"}``).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from banditree.core import FloatArray


def play_baseline(
    ids: Sequence[str], baseline: str | None, scores: FloatArray | None
) -> tuple[int, list[float], int, dict[str, float]]:
    """``(played, probabilities, greedy, extras)`` of an apprentice decision over the
    candidates ``ids`` (those not excluded) scored ``scores`` (None: no model yet)."""
    n = len(ids)
    played = ids.index(baseline) if baseline is not None and baseline in ids else 0
    estimates = np.zeros(n) if scores is None else scores
    greedy = int(np.argmax(estimates))
    probabilities = [0.0] * n
    probabilities[played] = 1.0
    extras = {
        "apprentice": 1.0,
        "own_estimate": float(estimates[greedy]),
        "default_estimate": float(estimates[played]),
    }
    return played, probabilities, greedy, extras
