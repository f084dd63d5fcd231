"""The hot paths' hand checks and the schemas refuse at the same bounds.

``service.edge.serve`` reads its keys and length bounds from the pydantic schemas; each
case here is a body exactly at a bound and one past it, sent to both the hand check
and the schema: the hand check takes what the schema takes and refuses what it refuses.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from service.domain.schemas import MAX_GIVEN_EVENT_ID, FeedbackCreate, PredictCreate
from service.edge import serve as parse
from service.http.routes.ranking import RankCreate

RANK_MAX = parse.length_bounds(RankCreate, "actions")[1]
FEEDBACK_MAX_ID = parse.length_bounds(FeedbackCreate, "event_id")[1]
RANK_MAX_ID = MAX_GIVEN_EVENT_ID  # a caller's event id: one rule, given_event_id_ok
CANDIDATE_MAX_ID = parse.length_bounds(parse.CandidateCreate, "id")[1]


def _schema_takes(model: type[BaseModel], body: dict[str, Any]) -> bool:
    try:
        model.model_validate(body)
    except ValidationError:
        return False
    return True


def _rank(**fields: Any) -> dict[str, Any]:
    return {"context": {"a": 1}, "actions": [{"id": "x"}], **fields}


FEEDBACK_CASES: dict[str, dict[str, Any]] = {
    "event id at the bound": {"event_id": "e" * FEEDBACK_MAX_ID, "loss": 0.5},
    "event id past the bound": {"event_id": "e" * (FEEDBACK_MAX_ID + 1), "loss": 0.5},
    "empty event id": {"event_id": "", "loss": 0.5},
    "unknown key": {"event_id": "e", "loss": 0.5, "extra": 1},
}

RANK_CASES: dict[str, dict[str, Any]] = {
    "candidates at the bound": _rank(actions=[{"id": f"c{i}"} for i in range(RANK_MAX)]),
    "candidates past the bound": _rank(actions=[{"id": f"c{i}"} for i in range(RANK_MAX + 1)]),
    "no candidate": _rank(actions=[]),
    "candidate id at the bound": _rank(actions=[{"id": "i" * CANDIDATE_MAX_ID}]),
    "candidate id past the bound": _rank(actions=[{"id": "i" * (CANDIDATE_MAX_ID + 1)}]),
    "excluded at the bound": _rank(excluded_actions=["x"] * RANK_MAX),
    "excluded past the bound": _rank(excluded_actions=["x"] * (RANK_MAX + 1)),
    "rank event id at the bound": _rank(event_id="e" * RANK_MAX_ID),
    "rank event id past the bound": _rank(event_id="e" * (RANK_MAX_ID + 1)),
    "unknown key": _rank(extra=1),
    "unknown candidate key": _rank(actions=[{"id": "x", "extra": 1}]),
}

PREDICT_CASES: dict[str, dict[str, Any]] = {
    "one context": {"context": [1.0, 2.0]},
    "event id at the bound": {"context": [1.0], "event_id": "e" * MAX_GIVEN_EVENT_ID},
    "event id past the bound": {"context": [1.0], "event_id": "e" * (MAX_GIVEN_EVENT_ID + 1)},
    "with its default": {"context": [1.0], "default_action": 0},
    "unknown key": {"context": [1.0], "extra": 1},
}


@pytest.mark.parametrize("case", list(FEEDBACK_CASES))
def test_feedback_bounds_match_the_schema(case: str) -> None:
    body = FEEDBACK_CASES[case]
    assert (parse.feedback_body(body) is not None) == _schema_takes(FeedbackCreate, body)


@pytest.mark.parametrize("case", list(RANK_CASES))
def test_rank_bounds_match_the_schema(case: str) -> None:
    body = RANK_CASES[case]
    assert (parse.rank_body(body) is not None) == _schema_takes(RankCreate, body)


@pytest.mark.parametrize("case", list(PREDICT_CASES))
def test_predict_keys_match_the_schema(case: str) -> None:
    body = PREDICT_CASES[case]
    assert (parse.predict_body(body) is not None) == _schema_takes(PredictCreate, body)


def test_each_bound_is_reached_on_both_sides() -> None:
    """The cases straddle every bound: at it both take the body, past it both refuse."""
    cases = FEEDBACK_CASES | RANK_CASES
    at = [c for c in cases if c.endswith("at the bound")]
    past = [c for c in cases if c.endswith("past the bound")]
    assert len(at) == len(past) == 5
    for case in at + past:
        check = parse.feedback_body if case in FEEDBACK_CASES else parse.rank_body
        assert (check(cases[case]) is not None) == (case in at), case


def test_the_documented_event_id_bounds_are_in_force() -> None:
    """Feedback event ids up to 128 characters (the ids predict issues and callers reuse),
    a caller's own event ids (rank, predict) up to 100 (Personalizer's bound): the same
    before and after the bounds came from the schemas."""
    assert (FEEDBACK_MAX_ID, RANK_MAX_ID, RANK_MAX, CANDIDATE_MAX_ID) == (128, 100, 256, 256)


def test_only_explain_is_left_to_the_route() -> None:
    assert set(PredictCreate.model_fields) - parse._PREDICT_KEYS == {"explain"}
    assert parse._FEEDBACK_KEYS == set(FeedbackCreate.model_fields)
    assert parse._RANK_KEYS == set(RankCreate.model_fields)
