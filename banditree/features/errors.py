"""The input error every layer raises for a bad context, decision or feedback."""

from __future__ import annotations


class InvalidInput(ValueError):
    """A context, decision or feedback the learner refuses; the model is left unchanged.

    ``field`` names the offending field (``context.country``, ``losses[1]``), so that
    the service can answer a 4xx that names it.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
