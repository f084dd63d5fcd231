"""The decisions of a batch held column by column (what a batched ``act`` makes).

A service answering a batch writes every decision out twice (the stored record and the
answer) and never needs a :class:`~banditree.core.records.Decision` object per row:
it reads the columns.  :meth:`DecisionColumns.rows` gives the decisions themselves,
field for field those that ``act`` makes for the same contexts and event ids.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from banditree.core.records import Decision


class FloatRows(list[list[float]]):
    """Contexts known to be lists of Python floats, finite (a checked request body).

    A batched ``act_columns`` keeps these lists as its decisions' contexts instead of
    writing its float64 copy back out with ``tolist``: the same floats (a float64 holds a
    Python float exactly), without a new list and its float objects per row.
    """

    __slots__ = ()


class ArrayRows(FloatRows):
    """:class:`FloatRows` read with their float64 ``(B, d)`` array (``array``: the same
    numbers, made for this batch alone), which a batched ``act_columns`` decides on
    instead of converting the lists (``banditree.kernel.rows.parse_rows``)."""

    __slots__ = ("array",)

    def __init__(self, rows: list[list[float]], array: Any) -> None:
        super().__init__(rows)
        self.array = array


@dataclass(frozen=True)
class DecisionColumns:
    """One list per :class:`~banditree.core.records.Decision` field, one entry per row.

    Every decision of a batch reads one snapshot, so ``model_version`` is one number.
    A column of a field that is None in every row is None itself (classification sets
    ``action``, ``propensity`` and ``greedy_action``; regression ``value`` and
    ``greedy_value``, and ``probes`` for two-point queries); ``leaf`` is None when the
    model reports no leaf.  ``extras`` maps a figure's name to its column.
    """

    event_ids: list[str]
    contexts: list[Any]  # lists of floats, or JSON objects for a learner with features
    model_version: int
    explored: list[bool]
    action: list[int] | None = None
    propensity: list[float] | None = None
    greedy_action: list[int] | None = None
    value: list[float] | None = None
    greedy_value: list[float] | None = None
    perturbation: list[int] | None = None
    probes: list[tuple[float, float]] | None = None
    leaf: list[int] | None = None
    extras: dict[str, list[float]] | None = None
    #: the contexts as the float64 ``(B, d)`` array the learner decided on (its copy of
    #: ``contexts``, the same numbers), when it has one: the stored form writes it out
    #: whole (``banditree.core.codec``); None otherwise
    context_array: Any = field(default=None, compare=False, repr=False)
    #: the compiled kernel's columns, as it made them: ``(action, propensity, greedy,
    #: leaf)`` int64 and float64 arrays (``leaf`` None for a forest), of a classification
    #: batch whose rows explored where the action is not the greedy one and have no
    #: perturbation or extras; None otherwise
    kernel_arrays: Any = field(default=None, compare=False, repr=False)
    #: the JSON array of the rows' public answers, when written already
    #: (``banditree.kernel.rows.write_rows``); None otherwise
    public_json: bytes | None = field(default=None, compare=False, repr=False)

    def __len__(self) -> int:
        return len(self.event_ids)

    def row_extras(self) -> list[dict[str, float]]:
        """One fresh extras mapping per row."""
        if not self.extras:
            return [{} for _ in self.event_ids]
        names = list(self.extras)
        columns = self.extras.values()
        return [dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)]

    def rows(self) -> list[Decision]:
        """The decisions, row by row."""
        n = len(self.event_ids)
        nones: list[None] = [None] * n
        return [
            Decision(
                event_id,
                context if isinstance(context, dict) else tuple(context),
                self.model_version,
                action=action,
                propensity=propensity,
                greedy_action=greedy,
                value=value,
                greedy_value=greedy_value,
                perturbation=perturbation,
                probes=probes,
                leaf=leaf,
                explored=explored,
                extras=extras,
            )
            for (
                event_id, context, action, propensity, greedy, value, greedy_value,
                perturbation, probes, leaf, explored, extras,
            ) in zip(
                self.event_ids,
                self.contexts,
                nones if self.action is None else self.action,
                [1.0] * n if self.propensity is None else self.propensity,
                nones if self.greedy_action is None else self.greedy_action,
                nones if self.value is None else self.value,
                nones if self.greedy_value is None else self.greedy_value,
                [0] * n if self.perturbation is None else self.perturbation,
                nones if self.probes is None else self.probes,
                nones if self.leaf is None else self.leaf,
                self.explored,
                self.row_extras(),
                strict=True,
            )
        ]  # fmt: skip

    @classmethod
    def from_decisions(cls, decisions: list[Decision]) -> DecisionColumns:
        """The columns of ``decisions`` (for learners without a columnar pass).

        The rows must come from one snapshot of one learner: one model version, each
        optional field set in every row or in none, the same extras names in every row
        (:class:`ValueError` otherwise), so that :meth:`rows` gives them back.
        """
        if not decisions:
            return cls(event_ids=[], contexts=[], model_version=0, explored=[])
        first = decisions[0]

        def column(name: str) -> list[Any] | None:
            values = [getattr(d, name) for d in decisions]
            if getattr(first, name) is None:
                if any(v is not None for v in values):
                    raise ValueError(f"{name} is set in some decisions of the batch only")
                return None
            if any(v is None for v in values):
                raise ValueError(f"{name} is set in some decisions of the batch only")
            return values

        names = list(first.extras)
        if any(list(d.extras) != names for d in decisions) or any(
            d.model_version != first.model_version for d in decisions
        ):
            raise ValueError("the decisions of a batch must share a model version and extras")
        return cls(
            event_ids=[d.event_id for d in decisions],
            contexts=[
                d.context if isinstance(d.context, dict) else list(d.context) for d in decisions
            ],
            model_version=first.model_version,
            explored=[d.explored for d in decisions],
            action=column("action"),
            propensity=[d.propensity for d in decisions],
            greedy_action=column("greedy_action"),
            value=column("value"),
            greedy_value=column("greedy_value"),
            perturbation=[d.perturbation for d in decisions],
            probes=column("probes"),
            leaf=column("leaf"),
            extras={n: [d.extras[n] for d in decisions] for n in names} if names else None,
        )
