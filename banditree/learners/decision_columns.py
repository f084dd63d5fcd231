"""A batch's decisions column by column (moved to :mod:`banditree.core.columns`)."""

from banditree.core.columns import DecisionColumns

__all__ = ["DecisionColumns"]
