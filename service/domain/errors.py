"""What the registry and the model runtimes refuse, in the service's own words.

The domain (``service.domain.registry``, ``service.domain.runtime``) raises these and knows nothing of
HTTP; :mod:`service.http.errors` alone turns each into an answer (its status and the error
body).  Every error carries a ``detail`` message naming what is wrong and the bound, and
the request ``field`` at fault (or None).
"""

from __future__ import annotations


class DomainError(Exception):
    """A request the service refuses: ``detail`` says why, ``field`` names the field at fault."""

    def __init__(self, detail: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.detail = detail
        self.field = field


class NotFound(DomainError):
    """Something the request names does not exist (a model, a checkpoint version)."""


class ModelNotFound(NotFound):
    """No model of this name is stored."""

    def __init__(self, name: str) -> None:
        super().__init__(f"model {name!r} does not exist", "name")


class Conflict(DomainError):
    """The request conflicts with what is stored."""


class ModelExists(Conflict):
    """A model of this name is stored already."""

    def __init__(self, name: str) -> None:
        super().__init__(f"model {name!r} exists; DELETE it first", "name")


class CapacityReached(Conflict):
    """This process serves ``max_models`` models already."""

    def __init__(self, held: int, limit: int) -> None:
        super().__init__(
            f"this server holds {held} models, the limit max_models={limit}; delete one first",
            "name",
        )


class InvalidRequest(DomainError):
    """A field is valid on its own but not for this model (an initial model, a loss)."""


class FeedbackRefused(DomainError):
    """The feedback's decision cannot take it: see the subclasses."""

    #: the store's name of the outcome (``unknown``, ``duplicate``, ``expired``)
    outcome = "unknown"
    #: what is wrong with the event id
    text = "cannot take feedback"

    def __init__(self, event_id: str) -> None:
        super().__init__(f"event_id {event_id!r} {self.text}", "event_id")


class UnknownDecision(FeedbackRefused):
    """No pending decision of the model has this event id."""

    outcome = "unknown"
    text = "is not a pending decision of this model"


class FeedbackDuplicate(FeedbackRefused):
    """The decision has received its feedback already."""

    outcome = "duplicate"
    text = "has already received its feedback"


class DecisionExpired(FeedbackRefused):
    """The decision's deadline passed before its feedback arrived."""

    outcome = "expired"
    text = "expired before its feedback arrived"


class Unavailable(DomainError):
    """The service cannot do it now (the store is away, no learner answered, the role)."""


#: the refusal of a feedback by the store's outcome
FEEDBACK_REFUSALS: dict[str, type[FeedbackRefused]] = {
    error.outcome: error for error in (UnknownDecision, FeedbackDuplicate, DecisionExpired)
}

__all__ = [
    "FEEDBACK_REFUSALS",
    "CapacityReached",
    "Conflict",
    "DecisionExpired",
    "DomainError",
    "FeedbackDuplicate",
    "FeedbackRefused",
    "InvalidRequest",
    "ModelExists",
    "ModelNotFound",
    "NotFound",
    "Unavailable",
    "UnknownDecision",
]
