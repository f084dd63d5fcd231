"""Decision and feedback records (moved to :mod:`banditree.core.records`)."""

from banditree.core.records import Decision, Feedback

__all__ = ["Decision", "Feedback"]
