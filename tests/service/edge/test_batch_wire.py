"""A batch written from its columns: the same stored records and answers as row by row."""

from __future__ import annotations

import orjson
import pytest

from banditree.core.codec import (
    column_payloads,
    columns_public,
    decision_payload,
    decision_public,
    read_decision,
)
from banditree.core.columns import FloatRows
from banditree.learners import DecisionColumns, UniformRandom, build_learner
from banditree.learners.gradient_bandit.base import GradientBase
from service.edge.serve import predict_body
from tests.learners.test_act_batch import trained
from tests.learners.test_contract import CASES, IDS, stream


def check_columns(columns: DecisionColumns) -> None:
    rows = columns.rows()
    payloads = column_payloads("uid-1", columns)
    assert payloads == [decision_payload("uid-1", d) for d in rows]
    assert [read_decision(p, "uid-1") for p in payloads] == rows
    assert columns_public(columns) == [decision_public(d) for d in rows]


@pytest.mark.parametrize("kind,task,estimator", CASES, ids=IDS)
def test_batch_records_and_answers_equal_those_of_the_rows(
    kind: str, task: str, estimator: str | None
) -> None:
    learner = trained(kind, task, estimator)
    x, _ = stream(9, seed=6)
    check_columns(learner.act_columns(x, [f"e{i}" for i in range(len(x))]))


@pytest.mark.parametrize(
    "config",
    [
        {"kind": "tel", "n_trees": 3, "height": 3},  # reachable-leaves extras
        {"kind": "hinge", "n_trees": 1, "height": 3},  # one tree reports its leaf
    ],
)
def test_batch_records_with_extras_and_leaves(config: dict[str, int | str]) -> None:
    learner = build_learner({**config, "n_features": 5, "n_actions": 3})
    x, _ = stream(5, seed=1)
    columns = learner.act_columns(x)
    assert columns.extras is not None or columns.leaf is not None
    check_columns(columns)


def test_batch_records_of_a_learner_without_a_columnar_pass() -> None:
    x, _ = stream(4, seed=3)
    check_columns(UniformRandom(5, 3, seed=2).act_columns(x))


@pytest.mark.parametrize("kind,task,estimator", CASES, ids=IDS)
def test_a_checked_batch_keeps_its_own_rows_with_the_same_records(
    kind: str, task: str, estimator: str | None
) -> None:
    learner = trained(kind, task, estimator)
    x, _ = stream(9, seed=6)
    body = predict_body(orjson.loads(orjson.dumps({"contexts": x.tolist()})))
    assert body is not None and isinstance(body.contexts, FloatRows)
    ids = [f"e{i}" for i in range(len(x))]
    kept, copied = learner.act_columns(body.contexts, ids), learner.act_columns(x, ids)
    if isinstance(learner, GradientBase):  # a batched pass: the request's lists themselves
        assert all(a is b for a, b in zip(kept.contexts, body.contexts, strict=True))
    assert column_payloads("uid-1", kept) == column_payloads("uid-1", copied)
    check_columns(kept)


def test_batch_records_write_the_uid_as_json() -> None:
    x, _ = stream(3, seed=2)
    columns = UniformRandom(5, 3, seed=2).act_columns(x)
    uid = 'uid "quoted" \\ \u00fc'
    payloads = column_payloads(uid, columns)
    assert payloads == [decision_payload(uid, d) for d in columns.rows()]
    assert [read_decision(p, uid) for p in payloads] == columns.rows()
