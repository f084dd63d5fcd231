"""A boosted model's readable policy: its online tree, with the ensemble's blend weight.

Trace, per-leaf statistics, the export and a named explanation read the online ``dgt``
tree every decision blends with the ensemble (``banditree.learners.boosted.readable``);
the trace's decision stays the blend's.  The service's routes over them:
``tests/service/http/test_boosted_routes.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from banditree.learners import Feedback, InvalidInput, build_learner
from banditree.learners.boosted import BoostedBandit
from banditree.persistence import dumps, loads

D, K = 3, 3


def boosted(**options: Any) -> BoostedBandit:
    learner = build_learner(
        {"kind": "boosted", "n_features": D, "n_actions": K, "seed": 1, "options": options}
    )
    assert isinstance(learner, BoostedBandit)
    return learner


def play(learner: Any, n: int, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, D))
    for row in x:
        d = learner.act(row)
        best = int(row[0] > 0) + int(row[1] > 0.5)
        learner.learn(d, Feedback(loss=float(d.action != best)))
    return x


def test_before_the_first_fit_the_trace_is_the_trees_own_at_weight_0() -> None:
    learner = boosted(first_fit=100)
    x = play(learner, 60)
    tree = learner.online_tree
    assert tree is not None and not learner.ensemble_decides
    traced, own = learner.trace(x[0]), tree.trace(x[0])
    assert traced["trees"] == own["trees"] and len(own["trees"]) == 1
    assert traced["estimates"] == own["estimates"] == traced["online_tree"]["estimates"]
    assert traced["probabilities"] == own["probabilities"]
    assert traced["greedy_action"] == own["greedy_action"]
    assert traced["blend"] == {
        "shown": "online_tree", "ensemble_weight": 0.0, "ensemble_decides": False,
        "fits": 0, "n_trees": 0,
    }  # fmt: skip


def test_the_trace_reads_the_blend_at_the_weight_it_reports() -> None:
    learner = boosted(first_fit=40)
    x = play(learner, 300)
    assert learner.ensemble_decides and learner._ensemble is not None
    tree = learner.online_tree
    assert tree is not None
    e_online, e_ensemble = learner._errors.online, learner._errors.ensemble
    w = e_online / (e_online + e_ensemble)
    for row in x[:20]:
        traced = learner.trace(row)
        assert traced["blend"]["ensemble_weight"] == pytest.approx(w, rel=1e-12)
        assert 0.0 < w < 1.0 and traced["blend"]["fits"] == learner.fits >= 2
        ensemble = learner._ensemble.action_scores(row)[0]
        online = tree.reward_estimates(row)
        np.testing.assert_allclose(traced["estimates"], w * ensemble + (1 - w) * online)
        assert traced["online_tree"]["estimates"] == online.tolist()
        assert traced["greedy_action"] == learner.act(row).greedy_action  # the model's
        np.testing.assert_allclose(traced["probabilities"], learner.action_probabilities(row))
        assert traced["trees"] == tree.trace(row)["trees"]  # the online tree's path
        assert traced["version"] == learner.version


def test_leaf_stats_count_every_feedback_at_the_online_trees_leaves() -> None:
    learner = boosted(first_fit=40)
    play(learner, 250)
    stats = learner.leaf_stats()
    assert stats is not None and len(stats["trees"]) == 1
    assert sum(leaf["feedbacks"] for leaf in stats["trees"][0]["leaves"]) == 250
    assert learner.leaf_probabilities() is None  # the blend's, not a leaf's own
    assert learner.input_scaling() == learner.online_tree.input_scaling()  # type: ignore[union-attr]
    restored = loads(dumps(learner))
    assert restored.leaf_stats() == stats and restored.blend_state() == learner.blend_state()


def test_the_export_carries_the_online_tree_and_the_blend() -> None:
    learner = boosted(first_fit=40)
    play(learner, 200)
    exported = learner.export_model()
    assert exported["kind"] == "boosted" and exported["fits"] == learner.fits
    assert exported["online_tree"] == learner.online_tree.export_model()  # type: ignore[union-attr]
    assert exported["online_tree"]["format"] == "banditree.hard_tree/v1"
    assert exported["blend"] == learner.blend_state()


def test_named_features_explain_the_online_trees_path() -> None:
    schema = {"colour": {"type": "categorical"}, "size": {"type": "numeric"}}
    learner = build_learner(
        {"kind": "boosted", "features": schema, "n_actions": 2, "options": {"first_fit": 20}}
    )
    rng = np.random.default_rng(0)
    for _ in range(150):
        colour = str(rng.choice(["red", "blue"]))
        d = learner.act({"colour": colour, "size": float(rng.normal())})
        learner.learn(d, Feedback(loss=float(d.action != (colour == "red"))))
    exported = learner.export_model()
    assert exported["online_tree"]["format"] == "banditree.named_tree/v1"
    assert exported["online_tree"]["columns"] == exported["columns"]
    context = {"colour": "red", "size": 0.5}
    assert learner.explainer is not None
    why = learner.explainer.explain(context)
    assert why and all(isinstance(line, str) for line in why)
    traced = learner.trace(context)
    assert traced["explanation"] == why and traced["blend"] == learner.blend_state()
    assert traced["blend"]["ensemble_decides"]
    leaf = traced["trees"][0]["leaf"]
    height = exported["online_tree"]["tree"]["height"]
    assert traced["trees"][0]["path"][-1] == (1 << height) - 1 + leaf
    with pytest.raises(InvalidInput, match="context: must be an object of named features"):
        learner.trace([0.5, 1.0])


def test_without_its_online_tree_a_boosted_model_refuses_a_trace_naming_context() -> None:
    learner = boosted(first_fit=40, compete=False)
    x = play(learner, 60)  # past the first fit: the ensemble alone decides
    assert learner.online_tree is None and learner.blend_state() is None
    with pytest.raises(InvalidInput, match="without its online tree") as refused:
        learner.trace(x[0])
    assert refused.value.field == "context"
    assert learner.leaf_stats() is None and "online_tree" not in learner.export_model()
