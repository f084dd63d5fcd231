"""service.http.errors alone turns the domain's errors into answers: status, detail, field."""

from __future__ import annotations

import json

import pytest
from starlette.requests import Request

from service.domain.errors import (
    FEEDBACK_REFUSALS,
    CapacityReached,
    DecisionExpired,
    DomainError,
    FeedbackDuplicate,
    InvalidRequest,
    ModelExists,
    ModelNotFound,
    NotFound,
    Unavailable,
    UnknownDecision,
)
from service.http.errors import error_answer

REQUEST = Request({"type": "http", "method": "POST", "path": "/v1/models/m/feedback"})


@pytest.mark.parametrize(
    ("error", "status", "field", "detail"),
    [
        (ModelNotFound("m"), 404, "name", "model 'm' does not exist"),
        (NotFound("no valid checkpoint of version 3", "version"), 404, "version", "no valid"),
        (ModelExists("m"), 409, "name", "model 'm' exists; DELETE it first"),
        (CapacityReached(5, 5), 409, "name", "holds 5 models, the limit max_models=5"),
        (UnknownDecision("e"), 404, "event_id", "'e' is not a pending decision of this model"),
        (FeedbackDuplicate("e"), 409, "event_id", "'e' has already received its feedback"),
        (DecisionExpired("e"), 410, "event_id", "'e' expired before its feedback arrived"),
        (InvalidRequest("default_loss: too large", "default_loss"), 422, "default_loss", "too"),
        (Unavailable("rollback failed: down"), 503, None, "rollback failed: down"),
    ],
)
def test_each_domain_error_has_its_status_and_body(
    error: DomainError, status: int, field: str | None, detail: str
) -> None:
    answer = error_answer(REQUEST, error)
    assert answer is not None and answer.status_code == status
    body = json.loads(bytes(answer.body))
    assert body["field"] == field and detail in body["detail"]
    assert body["detail"] == error.detail


def test_the_store_outcomes_of_a_refused_feedback() -> None:
    assert {outcome: error.__name__ for outcome, error in FEEDBACK_REFUSALS.items()} == {
        "unknown": "UnknownDecision",
        "duplicate": "FeedbackDuplicate",
        "expired": "DecisionExpired",
    }


def test_an_unmapped_domain_error_is_a_server_error() -> None:
    answer = error_answer(REQUEST, DomainError("a refusal without its own class"))
    assert answer is not None and answer.status_code == 500
