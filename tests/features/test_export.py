"""The named tree export and its reference evaluator reproduce the served decisions."""

from __future__ import annotations

import json

import numpy as np

from banditree.features.export import ReferenceEvaluator, split_text
from banditree.learners import FeaturedLearner, Feedback, build_learner
from tests.learners.test_featured import FEATURES, best, contexts


def trained(n: int = 1500, **extra: object) -> FeaturedLearner:
    """A single tree's named export (a boosted model's online tree is the same document:
    ``tests/learners/test_boosted_readable.py``)."""
    learner = build_learner({"kind": "dgt", "n_actions": 3, "features": FEATURES, **extra})
    assert isinstance(learner, FeaturedLearner)
    for ctx in contexts(n):
        d = learner.act(ctx)
        learner.learn(d, Feedback(loss=float(d.action != best(ctx))))
    return learner


def test_reference_evaluator_reproduces_1000_served_leaves_and_greedy_actions() -> None:
    learner = trained()
    document = json.loads(json.dumps(learner.export_model()))  # as a user receives it
    evaluator = ReferenceEvaluator(document)
    probe = contexts(1000, seed=11)
    probe[0] = {"country": "never seen", "tags": ["zz"], "extra": 1}  # unseen and missing
    decisions = [learner.act(c) for c in probe]
    assert [evaluator.leaf(c) for c in probe] == [d.leaf for d in decisions]
    assert [evaluator.greedy(c) for c in probe] == [d.greedy_action for d in decisions]
    served = learner.inner.reward_estimates(learner.encode(probe[5]))  # type: ignore[attr-defined]
    np.testing.assert_allclose(evaluator.scores(probe[5]), served, rtol=1e-9, atol=1e-12)


def test_unclipped_the_folded_splits_alone_reproduce_the_leaves() -> None:
    learner = trained(800, context_clip=0.0)
    document = learner.export_model()
    assert document["clip"] is None
    nodes = sorted(document["tree"]["nodes"], key=lambda n: n["id"])
    evaluator = ReferenceEvaluator(document)
    for ctx in contexts(200, seed=3):
        x, node = evaluator.encode(ctx), 0
        for _ in range(document["tree"]["height"]):
            n = nodes[node]
            node = 2 * node + (2 if np.dot(n["raw_weights"], x) + n["raw_bias"] > 0 else 1)
        assert node - len(nodes) == learner.act(ctx).leaf


def test_explanation_names_features_and_follows_the_path() -> None:
    learner = trained(600)
    ctx = contexts(1, seed=5)[0]
    why = learner.explain(ctx)
    assert len(why) == learner.export_model()["tree"]["height"]
    assert any("[country = " in line for line in why)
    assert "[tags slot" not in " ".join(why)  # empty slots are left out
    assert split_text(np.array([0.8, 0.0, -1.3]), -0.2, ["age", "x", "[c = DE]"]) == (
        "-1.3 * [c = DE] + 0.8 * age - 0.2 > 0"
    )


def test_the_readme_evaluator_reproduces_the_served_decisions() -> None:
    """The 20-line evaluator printed in the named-features guide, run as it stands."""
    from pathlib import Path

    readme = (Path(__file__).parents[2] / "docs" / "howto" / "named-features.md").read_text()
    code = next(b for b in readme.split("```python")[1:] if "def evaluate(doc, context)" in b)
    learner = trained(800)
    namespace: dict[str, object] = {"learner": learner}  # the guide's earlier block builds it
    exec(code.split("```")[0], namespace)  # the project's own guide
    evaluate = namespace["evaluate"]
    document = json.loads(json.dumps(learner.export_model()))
    for ctx in contexts(300, seed=8):
        ctx = {
            **ctx,
            "user.os": ctx.pop("user")["os"],
        }  # the README's evaluator reads flat contexts
        decision = learner.act(ctx)
        assert evaluate(document, ctx) == (decision.leaf, decision.greedy_action)  # type: ignore[operator]
