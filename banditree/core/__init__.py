"""The library's shared vocabulary: array aliases, decisions, feedback and their codec.

Every other layer imports from here; ``banditree.core`` imports nothing of the library.
"""

from banditree.core.arrays import FloatArray, IntArray
from banditree.core.columns import DecisionColumns
from banditree.core.records import Decision, Feedback

__all__ = ["Decision", "DecisionColumns", "Feedback", "FloatArray", "IntArray"]
