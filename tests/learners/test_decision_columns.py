"""Decision columns: the rows they give back, and the columns of decisions made elsewhere."""

from __future__ import annotations

import pytest

from banditree.learners import Decision, DecisionColumns, UniformRandom
from tests.learners.test_act_batch import assert_same_decisions, trained
from tests.learners.test_contract import CASES, IDS, stream


@pytest.mark.parametrize("kind,task,estimator", CASES, ids=IDS)
def test_columns_give_back_the_decisions_of_act(
    kind: str, task: str, estimator: str | None
) -> None:
    a, b = trained(kind, task, estimator), trained(kind, task, estimator)
    x, _ = stream(20, seed=4)
    ids = [f"event-{i}" for i in range(len(x))]
    columns = b.act_columns(x, ids)
    assert len(columns) == len(x)
    assert columns.model_version == a.version
    loop = [a.act(row, event_id) for row, event_id in zip(x, ids, strict=True)]
    assert_same_decisions(columns.rows(), loop)
    # the columns of those decisions give them back exactly
    again = DecisionColumns.from_decisions(loop).rows()
    assert [d.to_dict() for d in again] == [d.to_dict() for d in loop]


def test_default_columns_of_a_learner_without_a_columnar_pass() -> None:
    learner, twin = UniformRandom(4, 3, seed=1), UniformRandom(4, 3, seed=1)
    x, _ = stream(6, seed=2)
    columns = learner.act_columns(x[:, :4])
    assert columns.leaf is None and columns.value is None and columns.extras is None
    assert [d.to_dict() for d in columns.rows()] == [d.to_dict() for d in twin.act_batch(x[:, :4])]


def test_mixed_decisions_are_refused() -> None:
    one = Decision("a", (1.0,), 0, action=1, propensity=0.5, greedy_action=1, leaf=2)
    no_leaf = Decision("b", (1.0,), 0, action=1, propensity=0.5, greedy_action=1)
    with pytest.raises(ValueError, match="leaf is set in some decisions"):
        DecisionColumns.from_decisions([one, no_leaf])
    with pytest.raises(ValueError, match="leaf is set in some decisions"):
        DecisionColumns.from_decisions([no_leaf, one])
    later = Decision("c", (1.0,), 1, action=1, propensity=0.5, greedy_action=1, leaf=2)
    with pytest.raises(ValueError, match="share a model version"):
        DecisionColumns.from_decisions([one, later])
    assert len(DecisionColumns.from_decisions([])) == 0
