"""The feature schema and encoder: layout, missing values, vocabulary bounds, refusals."""

from __future__ import annotations

import json

import numpy as np
import pytest

from banditree.features import FeatureEncoder, FeatureSchema, InvalidInput, infer_schema
from banditree.features.schema import MAX_FEATURES, MAX_STRING_LENGTH

SCHEMA = {
    "age": "numeric",
    "country": {"type": "categorical", "max_categories": 2},
    "tags": {"type": "tags", "max_categories": 3},
    "premium": "boolean",
    "user": {"os": {"type": "categorical", "values": ["ios", "android"], "missing": False}},
}


def encoder() -> FeatureEncoder:
    return FeatureEncoder(FeatureSchema.model_validate(SCHEMA))


def test_layout_names_every_column_and_the_width_is_fixed() -> None:
    enc = encoder()
    assert enc.columns() == [
        "age", "[age missing]",
        "[country slot 0]", "[country slot 1]", "[country other]", "[country missing]",
        "[tags slot 0]", "[tags slot 1]", "[tags slot 2]", "[tags other]", "[tags missing]",
        "premium", "[premium missing]",
        "[user.os = ios]", "[user.os = android]", "[user.os other]",
    ]  # fmt: skip
    assert enc.width == len(enc.columns()) == 16


def test_vocabulary_is_learned_at_learn_time_bounded_and_read_after_publish() -> None:
    enc = encoder()
    ctx = {"age": 30, "country": "DE", "tags": ["a", "b"], "premium": True, "user": {"os": "ios"}}
    before = enc.encode(ctx)
    cols = enc.columns()
    assert before[cols.index("[country other]")] == 1.0  # not learned yet
    enc.update(ctx)
    assert enc.encode(ctx)[cols.index("[country other]")] == 1.0  # not published yet
    assert enc.encode(ctx, served=False)[cols.index("[country other]")] == 0.0
    enc.publish()
    enc.update({"country": "FR"})
    enc.update({"country": "US"})  # beyond the bound of 2: shares "other"
    enc.publish()
    assert enc.vocabulary("country") == ["DE", "FR"]
    x = enc.encode({"country": "US", "tags": ["b", "zz"], "premium": "no", "user": {"os": "ios"}})
    named = dict(zip(enc.columns(), x.tolist(), strict=True))
    assert named["[country other]"] == 1.0 and named["[country = DE]"] == 0.0
    assert named["[tags = b]"] == 1.0 and named["[tags other]"] == 1.0 and named["[tags = a]"] == 0
    assert named["premium"] == 0.0 and named["[user.os = ios]"] == 1.0
    # missing values: imputed mean and indicator; a missing category's indicator
    assert named["age"] == 30.0 and named["[age missing]"] == 1.0
    assert named["[premium missing]"] == 0.0


def test_integer_codes_and_strings_of_codes_are_one_category() -> None:
    enc = encoder()
    enc.update({"country": 3})
    enc.publish()
    a, b, c = (enc.encode({"country": v}) for v in (3, "3", 3.0))
    assert np.array_equal(a, b) and np.array_equal(a, c)
    assert a[enc.columns().index("[country = 3]")] == 1.0


@pytest.mark.parametrize(
    ("context", "field"),
    [
        ({"age": "old"}, "context.age"),
        ({"premium": "maybe"}, "context.premium"),
        ({"country": ["DE"]}, "context.country"),
        ({"country": "x" * (MAX_STRING_LENGTH + 1)}, "context.country"),
        ({"tags": [{"a": 1}]}, "context.tags[0]"),
        ({f"f{i}": 1 for i in range(MAX_FEATURES + 1)}, "context"),
        ([1.0, 2.0], "context"),
    ],
)
def test_refusals_name_the_field(context: object, field: str) -> None:
    with pytest.raises(InvalidInput) as err:
        encoder().encode(context)  # type: ignore[arg-type]
    assert err.value.field == field


@pytest.mark.parametrize(
    ("context", "field"),
    [
        ({"age": "old"}, "context.age"),
        ({"age": float("inf")}, "context.age"),
        ({"age": np.array([1.0, 2.0])}, "context.age"),
        ({"premium": "maybe"}, "context.premium"),
        ({"country": ["DE"]}, "context.country"),
        ({"country": np.array(["DE", "FR"])}, "context.country"),
        ({"country": "x" * (MAX_STRING_LENGTH + 1)}, "context.country"),
        ({"tags": [{"a": 1}]}, "context.tags[0]"),
    ],
)
def test_learning_refuses_what_encoding_refuses_naming_the_field(
    context: object, field: str
) -> None:
    with pytest.raises(InvalidInput) as err:
        encoder().update(context)  # type: ignore[arg-type]
    assert err.value.field == field


def test_missing_is_never_an_error_and_unknown_names_are_ignored() -> None:
    x = encoder().encode({"age": None, "tags": None, "extra": "ignored", "user": {}})
    named = dict(zip(encoder().columns(), x.tolist(), strict=True))
    assert named["[age missing]"] == 1.0 and named["[tags missing]"] == 1.0
    assert named["[country missing]"] == 1.0 and named["[premium missing]"] == 1.0
    assert sum(x) == 4.0  # the indicators only (age imputed with a mean of 0 so far)


def test_state_round_trips_through_json() -> None:
    enc = encoder()
    for ctx in ({"age": 20, "country": "DE", "tags": ["a"]}, {"age": 40, "country": "FR"}):
        enc.update(ctx)
    enc.publish()
    enc.update({"country": "IT", "age": 90})
    tensors, meta = enc.state()
    again = encoder()
    again.load_state(tensors, json.loads(json.dumps(meta, sort_keys=True)))
    for ctx in ({"country": "IT"}, {"country": "FR", "age": None}, {"tags": ["a", "q"]}):
        for served in (True, False):
            assert np.array_equal(enc.encode(ctx, served), again.encode(ctx, served))


def test_schema_order_survives_sorted_json_and_shorthand_equals_full_form() -> None:
    schema = FeatureSchema.model_validate(SCHEMA)
    again = FeatureSchema.model_validate(json.loads(json.dumps(schema.to_json(), sort_keys=True)))
    assert list(again.features) == ["age", "country", "tags", "premium", "user.os"]
    assert again == schema


def test_inference_rule() -> None:
    schema = infer_schema(
        [{"age": 31, "country": "DE", "tags": ["a"], "premium": True, "x": None, "d": {"os": "i"}}]
    )
    types = {name: spec.type for name, spec in schema.features.items()}
    assert types == {
        "age": "numeric", "country": "categorical", "tags": "tags", "premium": "boolean",
        "d.os": "categorical",
    }  # fmt: skip
    with pytest.raises(InvalidInput):
        infer_schema([{"x": None}])
