"""Per-leaf statistics: counted in log order, checkpointed, replayed identically."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from banditree.learners import Decision, Feedback, Learner, build_learner
from banditree.models.dgt.frozen import FrozenTree
from banditree.persistence import dumps, loads
from tests.learners.test_contract import N_ACTIONS, N_FEATURES, feedback_for, stream


def tree_learner(kind: str = "dgt", task: str = "classification", **extra: Any) -> Learner:
    config: dict[str, Any] = {
        "kind": kind,
        "task": task,
        "n_features": N_FEATURES,
        "height": 3,
        "n_trees": 3,
        "learning_rate": 0.05,
        "accumulate": 3,
        "seed": 5,
        **extra,
    }
    if task == "classification":
        config["n_actions"] = N_ACTIONS
    else:
        config["estimator"] = "one_point"
    return build_learner(config)


def served_leaves(learner: Learner, row: np.ndarray) -> list[int]:
    """The leaf ``row`` reaches in each tree, read from the learner's public export."""
    exported = learner.export_model()
    trees = exported["trees"] if "trees" in exported else [exported]
    mean, inv_scale, clip = learner.served_scaling()  # type: ignore[attr-defined]
    z = (row - mean) * inv_scale
    if clip is not None:
        z = np.clip(z, -clip, clip)
    return [FrozenTree.from_json(tree).leaf(z) for tree in trees]


def hand_count(learner: Learner, n: int, seed: int = 0) -> dict[str, np.ndarray]:
    """Act and learn ``n`` rounds, counting by hand where each learned context went."""
    x, labels = stream(n, seed)
    n_trees = 3 if learner.config()["kind"] == "dgt_forest" else 1
    decisions = np.zeros((n_trees, 8))
    loss_sum = np.zeros((n_trees, 8))
    actions = np.zeros((n_trees, 8, N_ACTIONS))
    for row, label in zip(x, labels, strict=True):
        d = learner.act(row)
        f = feedback_for(learner, d, int(label))
        for t, leaf in enumerate(served_leaves(learner, row)):  # the snapshot learned under
            decisions[t, leaf] += 1
            loss_sum[t, leaf] += f.loss if f.loss is not None else 0.0
            if d.action is not None:
                actions[t, leaf, d.action] += 1
        learner.learn(d, f)
    return {"decisions": decisions, "loss_sum": loss_sum, "actions": actions}


@pytest.mark.parametrize("kind", ["dgt", "dgt_forest"])
def test_counts_match_a_hand_count(kind: str) -> None:
    learner = tree_learner(kind)
    expected = hand_count(learner, 200)
    stats = learner.leaf_stats()
    assert stats is not None and stats["n_leaves"] == 8
    assert len(stats["trees"]) == expected["decisions"].shape[0]
    for t, tree in enumerate(stats["trees"]):
        assert tree["decisions"] == 200
        assert sum(leaf["share"] for leaf in tree["leaves"]) == pytest.approx(1.0)
        for leaf in tree["leaves"]:
            j = leaf["leaf"]
            assert leaf["decisions"] == expected["decisions"][t, j]
            assert leaf["feedbacks"] == leaf["decisions"]
            assert leaf["action_counts"] == expected["actions"][t, j].tolist()
            if leaf["feedbacks"]:
                assert leaf["mean_loss"] == pytest.approx(
                    expected["loss_sum"][t, j] / expected["decisions"][t, j]
                )
            else:
                assert leaf["mean_loss"] is None
        assert sum(1 for leaf in tree["leaves"] if leaf["decisions"]) >= 2  # traffic spreads


def test_single_tree_leaves_are_the_decisions_own() -> None:
    """Decided and learned at once, a decision is counted at the leaf it reports."""
    learner = tree_learner()
    x, labels = stream(150, seed=4)
    reached = np.zeros(8)
    for row, label in zip(x, labels, strict=True):
        d = learner.act(row)
        assert d.leaf is not None
        reached[d.leaf] += 1
        learner.learn(d, feedback_for(learner, d, int(label)))
    stats = learner.leaf_stats()
    assert stats is not None
    assert [leaf["decisions"] for leaf in stats["trees"][0]["leaves"]] == reached.tolist()


def test_unanswered_decisions_count_as_decisions_only() -> None:
    learner = tree_learner()
    hand_count(learner, 40)
    row = stream(1, seed=9)[0][0]
    d = learner.act(row)
    (leaf,) = served_leaves(learner, row)
    before = learner.leaf_stats()
    learner.note_unanswered(d)
    after = learner.leaf_stats()
    assert before is not None and after is not None
    old, new = before["trees"][0]["leaves"][leaf], after["trees"][0]["leaves"][leaf]
    assert new["decisions"] == old["decisions"] + 1
    assert new["feedbacks"] == old["feedbacks"]
    assert new["mean_loss"] == old["mean_loss"]
    assert sum(new["action_counts"]) == sum(old["action_counts"]) + 1


def test_regression_counts_losses_without_actions() -> None:
    learner = tree_learner(task="regression")
    hand = hand_count(learner, 60)
    stats = learner.leaf_stats()
    assert stats is not None
    leaves = stats["trees"][0]["leaves"]
    assert [leaf["decisions"] for leaf in leaves] == hand["decisions"][0].tolist()
    assert all("action_counts" not in leaf for leaf in leaves)


def test_models_without_leaves_have_none() -> None:
    assert tree_learner("linear").leaf_stats() is None


def pairs(n: int, seed: int = 1) -> list[tuple[Decision, Feedback]]:
    actor = tree_learner("dgt_forest")
    x, labels = stream(n, seed)
    out = []
    for row, label in zip(x, labels, strict=True):
        d = actor.act(row)
        f = feedback_for(actor, d, int(label))
        actor.learn(d, f)
        out.append((d, f))
    return out


def test_checkpoint_round_trip_keeps_and_resumes_the_counts() -> None:
    logged = pairs(100)
    live = tree_learner("dgt_forest")
    for d, f in logged[:50]:  # 50 = 16 eager + 11 windows of 3 + 1 queued
        live.learn(d, f)
    restored = loads(dumps(live))
    assert restored.leaf_stats() == live.leaf_stats()
    for d, f in logged[50:]:
        live.learn(d, f)
        restored.learn(d, f)
    assert restored.leaf_stats() == live.leaf_stats()


def test_replay_in_batches_equals_live() -> None:
    """The log replayed in chunks (what the service's learner does) counts what the live
    learner counted pair by pair, unanswered decisions between the chunks included."""
    logged = pairs(120, seed=2)
    live, replayed = tree_learner("dgt_forest"), tree_learner("dgt_forest")
    for i, (d, f) in enumerate(logged):
        live.learn(d, f)
        if i % 25 == 24:
            live.note_unanswered(d)
    for start in range(0, len(logged), 25):
        chunk = logged[start : start + 25]
        decisions, feedbacks = [d for d, _ in chunk], [f for _, f in chunk]
        assert all(isinstance(r, bool) for r in replayed.learn_batch(decisions, feedbacks))
        if len(chunk) == 25:
            replayed.note_unanswered(chunk[-1][0])
    assert replayed.leaf_stats() == live.leaf_stats()


def test_named_features_are_counted() -> None:
    learner = build_learner(
        {
            "kind": "dgt",
            "task": "classification",
            "n_actions": 2,
            "height": 2,
            "seed": 1,
            "features": {"age": "numeric", "city": "categorical"},
        }
    )
    rng = np.random.default_rng(0)
    for _ in range(30):
        context = {"age": float(rng.normal(40, 10)), "city": str(rng.choice(["a", "b"]))}
        d = learner.act(context)
        learner.learn(d, Feedback(loss=float(d.action == 0)))
    learner.note_unanswered(learner.act({"age": 30.0, "city": "a"}))
    stats = learner.leaf_stats()
    assert stats is not None
    tree = stats["trees"][0]
    assert tree["decisions"] == 31
    assert sum(leaf["feedbacks"] for leaf in tree["leaves"]) == 30
