"""The one decision codec: every form a decision travels in gives the decision back."""

from __future__ import annotations

from dataclasses import fields

import orjson
import pytest

from banditree.client import PredictResult
from banditree.core import Decision, DecisionColumns
from banditree.core.codec import (
    PUBLIC_FIELDS,
    column_records,
    columns_public,
    decision_from_json,
    decision_from_public,
    decision_from_record,
    decision_public,
    decision_record,
    decision_to_dict,
    record_json,
)
from service.domain.schemas import DecisionPublic

CLASSIFICATION = Decision.of_action("e1", (0.5, -1.0), 3, 2, 0.25, 1, 7, {"reach": 1.5})
REGRESSION = Decision("e2", (1.0,), 4, value=2.5, greedy_value=2.0, perturbation=1)
TWO_POINT = Decision("e3", (0.0, 2.0), 5, value=1.0, greedy_value=1.0, probes=(1.5, 0.5))


@pytest.mark.parametrize("decision", [CLASSIFICATION, REGRESSION, TWO_POINT])
def test_record_json_and_full_mapping_give_the_decision_back(decision: Decision) -> None:
    record = decision_record(decision)
    assert None not in record.values()
    assert list(record) == [k for k in decision_to_dict(decision) if k in record]
    assert decision_from_record(record) == decision
    assert decision_from_record(decision_to_dict(decision)) == decision
    text = record_json({"uid": "u", "decision": record})
    assert decision_from_json(orjson.dumps(orjson.loads(text)["decision"])) == decision


@pytest.mark.parametrize("decision", [CLASSIFICATION, REGRESSION, TWO_POINT])
def test_public_answer_holds_one_task_and_reads_back(decision: Decision) -> None:
    public = decision_public(decision)
    assert set(public) <= set(PUBLIC_FIELDS)
    assert ("action" in public) != ("value" in public)
    back = decision_from_public(orjson.loads(orjson.dumps(public)), decision.context)
    assert decision_public(back) == public
    assert back.propensity == decision.propensity and back.probes == decision.probes


def test_columns_write_the_records_and_answers_of_their_rows() -> None:
    rows = [CLASSIFICATION, Decision.of_action("e9", (0.0, 1.0), 3, 0, 0.5, 0, 2, {"reach": 1.0})]
    columns = DecisionColumns.from_decisions(rows)
    # the same JSON (a column's context is a list, a decision's a tuple)
    assert orjson.dumps(column_records(columns)) == orjson.dumps([decision_record(d) for d in rows])
    assert columns_public(columns) == [decision_public(d) for d in rows]


def test_the_schema_and_the_client_read_the_codecs_public_fields() -> None:
    assert tuple(DecisionPublic.model_fields) == PUBLIC_FIELDS
    assert tuple(f.name for f in fields(PredictResult)) == PUBLIC_FIELDS
    assert PredictResult.from_json(decision_public(TWO_POINT)).probes == (1.5, 0.5)


@pytest.mark.parametrize("decision", [CLASSIFICATION, REGRESSION, TWO_POINT])
def test_from_fields_is_the_constructor(decision: Decision) -> None:
    record = decision_record(decision)
    made = Decision.from_fields(dict(record))
    assert made == Decision(**record) == decision
    assert list(vars(made)) == [f.name for f in fields(Decision)]  # stored in field order
    assert made.extras is not Decision.from_fields(dict(record, extras=None)).extras


@pytest.mark.parametrize(
    "record",
    [
        {"event_id": "e", "context": [1.0], "model_version": 0, "colour": "red"},
        {"event_id": "e", "context": [1.0]},
        {"context": [1.0], "model_version": 0, "action": 1},
    ],
)
def test_from_fields_refuses_what_the_constructor_refuses(record: dict[str, object]) -> None:
    with pytest.raises(TypeError) as by_constructor:
        Decision(**record)  # type: ignore[arg-type]
    with pytest.raises(TypeError) as by_fields:
        Decision.from_fields(record)
    assert str(by_fields.value) == str(by_constructor.value)
    assert (
        Decision.from_fields(
            {"extras": None, "event_id": "e", "context": (), "model_version": 1}
        ).extras
        == {}
    )
