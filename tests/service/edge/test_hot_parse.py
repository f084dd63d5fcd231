"""The hot paths' hand checks take a body only where the schema takes it, with the same values.

:mod:`service.edge.serve` may refuse more than the schemas (the route then answers), never
less; the usual bodies must be taken (else the hot path would not be hot).
"""

from __future__ import annotations

import random
from typing import Any

import pytest
from pydantic import ValidationError

from service.domain.schemas import MAX_CONTEXT_LENGTH, FeedbackCreate, PredictCreate
from service.edge.serve import feedback_body, predict_body

TAKEN_PREDICTS: list[Any] = [
    {"context": [0.5, -1.0, 2.0]},
    {"context": [1, 2, 3]},  # integers become floats
    {"context": []},
    {"context": [0.0] * MAX_CONTEXT_LENGTH},
    {"contexts": [[0.5, 1.0], [2, -3]]},
    {"contexts": []},
    {"context": [0.5], "default_action": 3},
    {"context": [0.5], "default_action": None},
    {"contexts": [[0.5], [1.0]], "default_actions": [0, 7]},
]
TAKEN_FEEDBACK: list[Any] = [
    {"event_id": "a" * 36, "loss": 0.5},
    {"event_id": "e", "loss": 1},
    {"event_id": "e", "reward": -2.5},
    {"event_id": "e" * 128, "losses": [0.25, 1]},
]
#: values the random bodies are built from: valid and invalid, nested or not
ATOMS: list[Any] = [
    0, 1, -1, 7, 2**70, 0.5, -1e300, 1e308, True, False, None, "1", "", "e" * 129, [], {},
    [0.5, 1.0], [1, "2"], [True], [[0.5]], [[1, 2], [3.5]], [[0.5], "x"], [None], [0, 1],
    [-1], [0.5, 1.0, 2.0],
]  # fmt: skip
PREDICT_KEYS = ["context", "contexts", "default_action", "default_actions", "extra"]
FEEDBACK_KEYS = ["event_id", "loss", "reward", "losses", "extra"]


def _schema(model: type[PredictCreate] | type[FeedbackCreate], data: Any) -> Any:
    try:
        return model.model_validate(data)
    except ValidationError:
        return None


#: event ids of the random feedback bodies: mostly valid ones
EVENT_IDS: list[Any] = ["e", "e" * 128, "e" * 129, "", 5, None, ["e"]]


def _random_bodies(keys: list[str], count: int) -> list[Any]:
    rng = random.Random(0)
    bodies: list[Any] = [rng.choice(ATOMS) for _ in range(20)]
    for _ in range(count):
        chosen = rng.sample(keys, rng.randint(0, 3))
        body = {key: rng.choice(ATOMS) for key in chosen}
        if "event_id" in body:
            body["event_id"] = rng.choice(EVENT_IDS)
        bodies.append(body)
    return bodies


@pytest.mark.parametrize("data", TAKEN_PREDICTS)
def test_usual_predict_bodies_are_taken_as_the_schema_reads_them(data: Any) -> None:
    body = predict_body(data)
    schema = PredictCreate.model_validate(data)
    assert body is not None
    assert (body.context, body.contexts, body.defaults()) == (
        schema.context, schema.contexts, schema.defaults()
    )  # fmt: skip
    rows = [body.context] if body.context is not None else body.contexts or []
    assert all(type(v) is float for row in rows for v in row)


@pytest.mark.parametrize(
    "contexts",
    [
        [{"age": 31, "country": "DE"}, {"age": 40}],  # named features, as the schema takes them
        [[0.5, 2], {"age": 31}],  # numbers beside named features
    ],
)
def test_a_batch_of_named_features_is_taken_as_the_schema_reads_it(contexts: Any) -> None:
    body = predict_body({"contexts": contexts})
    schema = PredictCreate.model_validate({"contexts": contexts})
    assert body is not None
    assert body.contexts == schema.contexts
    assert [type(row) for row in body.contexts] == [type(row) for row in contexts]


@pytest.mark.parametrize("contexts", [[[0.5], [float("nan")]], [[0.5], ["1"]], [[0.5], None]])
def test_a_batch_with_a_bad_context_is_left_to_the_route(contexts: Any) -> None:
    assert predict_body({"contexts": contexts}) is None
    assert _schema(PredictCreate, {"contexts": contexts}) is None


@pytest.mark.parametrize("data", TAKEN_FEEDBACK)
def test_usual_feedback_bodies_are_taken_as_the_schema_reads_them(data: Any) -> None:
    body = feedback_body(data)
    schema = FeedbackCreate.model_validate(data)
    assert body is not None
    losses = None if schema.losses is None else tuple(schema.losses)
    assert (body.event_id, body.loss, body.reward, body.losses) == (
        schema.event_id, schema.loss, schema.reward, losses
    )  # fmt: skip


def test_a_predict_body_the_schema_refuses_is_never_taken() -> None:
    taken = 0
    for data in _random_bodies(PREDICT_KEYS, 4000):
        body = predict_body(data)
        if body is not None:
            taken += 1
            schema = _schema(PredictCreate, data)
            assert schema is not None, data
            assert (body.context, body.contexts, body.defaults()) == (
                schema.context, schema.contexts, schema.defaults()
            ), data  # fmt: skip
    assert taken > 50  # the table reaches bodies that are taken, too


def test_a_feedback_body_the_schema_refuses_is_never_taken() -> None:
    taken = 0
    for data in _random_bodies(FEEDBACK_KEYS, 4000):
        body = feedback_body(data)
        if body is not None:
            taken += 1
            schema = _schema(FeedbackCreate, data)
            assert schema is not None, data
            assert (body.event_id, body.loss, body.reward) == (
                schema.event_id, schema.loss, schema.reward
            ), data  # fmt: skip
    assert taken > 20


@pytest.mark.skipif(__import__("banditree").kernel.ACTIVE != "native", reason="the kernel reads")
def test_the_kernels_one_context_is_the_hand_checks_context() -> None:
    """A one-context body read by the kernel (:func:`parse_row`) gives the context the
    hand checks give, bit for bit, and a body it declines is one they read otherwise."""
    import struct

    import orjson

    from banditree.kernel.rows import parse_row

    rng = random.Random(5)
    for _ in range(300):
        row = [
            rng.choice([rng.uniform(-1, 1), rng.randint(-9, 9), -0.0, 1e-300, 2.0**60])
            for _ in range(rng.randint(1, 20))
        ]
        body = orjson.dumps({"context": row})
        found = parse_row(body, MAX_CONTEXT_LENGTH)
        checked = predict_body(orjson.loads(body))
        assert found is not None and checked is not None and checked.context is not None
        assert [struct.pack("<d", v) for v in found] == [
            struct.pack("<d", v) for v in checked.context
        ]
    assert parse_row(b'{"context": []}', MAX_CONTEXT_LENGTH) is None  # the hand checks read it
    assert parse_row(b'{"context": [NaN]}', 10) is None  # refused by the hand checks too
