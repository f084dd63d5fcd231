"""A window's upstreams for a classification learner: per example, and all at once."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import overload

from banditree.core.arrays import FloatArray
from banditree.core.records import Decision, Feedback
from banditree.estimators import Estimator
from banditree.models.spec import UpstreamFn


class WindowUpstreams(Sequence[UpstreamFn]):
    """``upstreams[b]`` maps example ``b``'s output to ``d loss / d output`` (what every
    model calls); :meth:`rows` maps all outputs ``(B, K)`` at once, which a model may
    call instead (:func:`banditree.models.spec.upstream_rows`): the same numbers from
    the estimator's :meth:`~banditree.estimators.base.Estimator.upstream_rows`, without
    a Python call and an array per example."""

    __slots__ = ("decisions", "estimator", "feedbacks")

    def __init__(
        self, estimator: Estimator, decisions: Sequence[Decision], feedbacks: Sequence[Feedback]
    ) -> None:
        self.estimator, self.decisions, self.feedbacks = estimator, decisions, feedbacks

    def rows(self, outputs: FloatArray) -> FloatArray:
        return self.estimator.upstream_rows(outputs, self.decisions, self.feedbacks)

    def __len__(self) -> int:
        return len(self.decisions)

    @overload
    def __getitem__(self, index: int) -> UpstreamFn: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[UpstreamFn]: ...

    def __getitem__(self, index: int | slice) -> UpstreamFn | Sequence[UpstreamFn]:
        if isinstance(index, slice):
            return WindowUpstreams(self.estimator, self.decisions[index], self.feedbacks[index])
        est, decision, feedback = self.estimator, self.decisions[index], self.feedbacks[index]
        return lambda out: est.upstream(out, decision, feedback)

    def __iter__(self) -> Iterator[UpstreamFn]:
        return (self[b] for b in range(len(self.decisions)))
