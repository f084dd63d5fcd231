"""Plain, serialisable records exchanged between a learner and its callers."""

from __future__ import annotations

import math
from dataclasses import MISSING, asdict, dataclass, field, fields
from typing import Any

_set_attribute = object.__setattr__


@dataclass(frozen=True, init=False)
class Decision:
    """One decision, with everything needed to learn from its loss later, elsewhere.

    ``context`` is the raw context as given (before standardisation): a tuple of floats,
    or, for a learner with a feature schema, the JSON object of named features.  For
    classification ``action`` and ``propensity`` (the probability the action was
    played with) are set; for regression ``value`` is the value to play
    (``greedy_value + delta * perturbation`` for one-point feedback) and ``probes``
    holds the two values of a two-point query.

    ``ranking`` is set by ranking models only (None otherwise, and then absent from
    every stored form, so the other models' records are unchanged): the whole
    candidate set of the decision as JSON (:mod:`banditree.ranking.model` documents
    its keys), ``action`` indexing the candidate played.
    """

    event_id: str
    context: tuple[float, ...] | dict[str, Any]
    model_version: int
    action: int | None = None
    propensity: float = 1.0
    greedy_action: int | None = None
    value: float | None = None
    greedy_value: float | None = None
    perturbation: int = 0
    probes: tuple[float, float] | None = None
    leaf: int | None = None
    explored: bool = False
    extras: dict[str, float] = field(default_factory=dict)
    ranking: dict[str, Any] | None = None

    def __init__(
        self,
        event_id: str,
        context: tuple[float, ...] | dict[str, Any],
        model_version: int,
        action: int | None = None,
        propensity: float = 1.0,
        greedy_action: int | None = None,
        value: float | None = None,
        greedy_value: float | None = None,
        perturbation: int = 0,
        probes: tuple[float, float] | None = None,
        leaf: int | None = None,
        explored: bool = False,
        extras: dict[str, float] | None = None,
        ranking: dict[str, Any] | None = None,
    ) -> None:
        # the fields in one assignment: a frozen dataclass's own __init__ sets them one
        # object.__setattr__ at a time, a third of a decision's bookkeeping
        _set_attribute(
            self,
            "__dict__",
            {
                "event_id": event_id,
                "context": context,
                "model_version": model_version,
                "action": action,
                "propensity": propensity,
                "greedy_action": greedy_action,
                "value": value,
                "greedy_value": greedy_value,
                "perturbation": perturbation,
                "probes": probes,
                "leaf": leaf,
                "explored": explored,
                "extras": {} if extras is None else extras,
                "ranking": ranking,
            },
        )

    @classmethod
    def of_action(
        cls,
        event_id: str,
        context: tuple[float, ...] | dict[str, Any],
        model_version: int,
        action: int,
        propensity: float,
        greedy_action: int,
        leaf: int | None,
        extras: dict[str, float],
    ) -> Decision:
        """A classification decision (``explored`` when ``action != greedy_action``).

        The constructor called positionally: keyword arguments cost a quarter of a
        decision's construction, paid on every decision.
        """
        return cls(
            event_id, context, model_version, action, propensity, greedy_action,
            None, None, 0, None, leaf, action != greedy_action, extras,
        )  # fmt: skip

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (round-trips through :meth:`from_dict`); ``ranking`` only
        where it is set."""
        out = asdict(self)
        if out["ranking"] is None:
            del out["ranking"]
        return out

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Decision:
        data = dict(data)
        if not isinstance(data["context"], dict):
            data["context"] = tuple(float(v) for v in data["context"])
        if data.get("probes") is not None:
            lo, hi = data["probes"]
            data["probes"] = (float(lo), float(hi))
        data["extras"] = dict(data.get("extras") or {})
        return cls(**data)

    @classmethod
    def from_fields(cls, values: dict[str, Any]) -> Decision:
        """``Decision(**values)``: the same decision (the values taken as they are, the
        fields in field order), without the keyword call, which was a third of a
        decoded log entry's cost.  A missing or unknown field raises the constructor's
        TypeError."""
        state = {**_DECISION_DEFAULTS, **values}  # the fields in field order
        if len(state) != len(_DECISION_DEFAULTS) or not (
            "event_id" in values and "context" in values and "model_version" in values
        ):  # an unknown field, or a required one missing
            return cls(**values)  # raises the constructor's own error
        if state["extras"] is None:
            state["extras"] = {}
        decision = _new(cls)
        _set_attribute(decision, "__dict__", state)
        return decision


#: every field of a Decision in field order, with its default (None for the required
#: ones and for ``extras``, made a new dict per decision): what
#: :meth:`Decision.from_fields` starts from
_DECISION_DEFAULTS: dict[str, Any] = {
    f.name: None if f.default is MISSING else f.default for f in fields(Decision)
}
_new = object.__new__


@dataclass(frozen=True)
class Feedback:
    """What the environment reports for a decision.

    * bandit classification / one-point regression: ``loss`` of the played action or value;
    * two-point regression: ``losses = (loss at value + delta, loss at value - delta)``;
    * full information (supervised upper bound, tests): ``label``.
    """

    loss: float | None = None
    losses: tuple[float, float] | None = None
    label: float | None = None

    def __post_init__(self) -> None:
        if self.loss is not None and not math.isfinite(self.loss):
            raise ValueError(f"loss must be a finite number, got {self.loss}")
        if self.losses is not None:
            if len(self.losses) != 2:
                raise ValueError(f"losses must hold exactly 2 values, got {len(self.losses)}")
            if not all(math.isfinite(v) for v in self.losses):
                raise ValueError(f"losses must be finite numbers, got {list(self.losses)}")
        if self.label is not None and not math.isfinite(self.label):
            raise ValueError(f"label must be a finite number, got {self.label}")

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready mapping (round-trips through :meth:`from_dict`)."""
        return asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Feedback:
        losses = data.get("losses")
        return cls(
            loss=data.get("loss"),
            losses=None if losses is None else (float(losses[0]), float(losses[1])),
            label=data.get("label"),
        )
