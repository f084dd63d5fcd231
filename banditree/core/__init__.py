"""The library's shared vocabulary: array aliases, decisions, feedback and their codec.

Every other layer imports from here; ``banditree.core`` imports nothing of the library.
The names load on first use (the decision records need no numpy, the array aliases do).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from banditree.core.lazy import lazy_names

if TYPE_CHECKING:
    from banditree.core.arrays import FloatArray, IntArray
    from banditree.core.columns import DecisionColumns
    from banditree.core.records import Decision, Feedback

_WHERE = {
    "Decision": "banditree.core.records",
    "DecisionColumns": "banditree.core.columns",
    "Feedback": "banditree.core.records",
    "FloatArray": "banditree.core.arrays",
    "IntArray": "banditree.core.arrays",
}

__all__ = ["Decision", "DecisionColumns", "Feedback", "FloatArray", "IntArray"]

__getattr__ = lazy_names(__name__, _WHERE)
