"""A context's trace and the leaves' probabilities: read from the served snapshot, deciding nothing."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from banditree.learners import Feedback, InvalidInput, build_learner
from banditree.learners.gradient_bandit.introspect import leaf_path
from tests.learners.test_contract import assert_same_state, feedback_for, stream
from tests.learners.test_leaf_stats import tree_learner


def test_leaf_path_walks_breadth_first_ids() -> None:
    assert leaf_path(0, 1) == [0, 1]
    assert leaf_path(5, 3) == [0, 2, 5, 12]  # right, left, right: leaf 5 = node 7 + 5
    for leaf in range(8):
        path = leaf_path(leaf, 3)
        assert all(
            child in (2 * parent + 1, 2 * parent + 2) for parent, child in itertools.pairwise(path)
        )


@pytest.mark.parametrize("kind", ["dgt", "dgt_forest"])
def test_trace_agrees_with_act_and_changes_nothing(kind: str) -> None:
    learner = tree_learner(kind)
    x, labels = stream(80, seed=3)
    for row, label in zip(x[:60], labels[:60], strict=True):
        d = learner.act(row)
        learner.learn(d, feedback_for(learner, d, int(label)))
    other = tree_learner(kind)
    other.load_state(*learner.state())
    for row in x[60:]:
        traced = learner.trace(row)
        assert_same_state(learner, other)  # no event id drawn, nothing counted
        d = other.act(row)
        other = tree_learner(kind)
        other.load_state(*learner.state())
        assert traced["greedy_action"] == d.greedy_action
        assert traced["probabilities"][d.action] == pytest.approx(d.propensity)
        assert sum(traced["probabilities"]) == pytest.approx(1.0)
        assert len(traced["trees"]) == (3 if kind == "dgt_forest" else 1)
        for tree in traced["trees"]:
            assert tree["path"] == leaf_path(tree["leaf"], 3)
        if kind == "dgt":
            assert traced["trees"][0]["leaf"] == d.leaf


def test_regression_trace_gives_the_greedy_value() -> None:
    learner = tree_learner(task="regression")
    row = stream(1)[0][0]
    d = learner.act(row)
    assert learner.trace(row)["greedy_value"] == pytest.approx(d.greedy_value)


def test_named_trace_explains_and_refuses_a_bad_context() -> None:
    learner = build_learner(
        {
            "kind": "dgt",
            "task": "classification",
            "n_actions": 2,
            "height": 2,
            "features": {"age": "numeric", "city": "categorical"},
        }
    )
    for i in range(20):
        d = learner.act({"age": 20.0 + i, "city": "ab"[i % 2]})
        learner.learn(d, Feedback(loss=float(d.action == i % 2)))
    context = {"age": 33.0, "city": "a"}
    traced = learner.trace(context)
    assert traced["explanation"] == learner.explain(context)  # type: ignore[attr-defined]
    assert len(traced["explanation"]) == 2
    with pytest.raises(InvalidInput):
        learner.trace([1.0, 2.0])


def test_leaf_probabilities_are_the_explorers_on_each_leaf() -> None:
    learner = tree_learner()
    x, labels = stream(50)
    for row, label in zip(x, labels, strict=True):
        d = learner.act(row)
        learner.learn(d, feedback_for(learner, d, int(label)))
    probabilities = learner.leaf_probabilities()
    assert probabilities is not None and len(probabilities) == 1 and len(probabilities[0]) == 8
    assert np.allclose([sum(p) for p in probabilities[0]], 1.0)
    # the context at the served mean (where a linear term adds nothing) is played with
    # its leaf's pmf
    d = learner.act(np.array(learner.input_scaling()["mean"]))  # type: ignore[index]
    assert d.leaf is not None
    assert probabilities[0][d.leaf][d.action] == pytest.approx(d.propensity)
    assert tree_learner("dgt_forest").leaf_probabilities() is None
    assert tree_learner("linear").leaf_probabilities() is None
