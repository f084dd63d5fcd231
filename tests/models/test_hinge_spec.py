"""The hinge bandit model (kind "hinge"): numpy spec against torch, learner contract."""

from __future__ import annotations

import json

import numpy as np
import pytest
import torch

from banditree.datasets import load
from banditree.learners import Feedback, InvalidInput, build_learner, known_kinds
from banditree.learners.gradient_bandit import GradientBandit
from banditree.models.hinge.function import hinge_forest
from banditree.models.hinge.spec import HingeSpec
from banditree.persistence import dumps, loads

SPECS = [
    {"ferns": False, "pool": 0, "reduction": "mean"},
    {"ferns": True, "pool": 0, "reduction": "sum"},
    {"ferns": False, "pool": 7, "reduction": "sum"},
    {"ferns": True, "pool": 7, "reduction": "mean"},
]


def torch_output(spec: HingeSpec, params: dict[str, np.ndarray], x: torch.Tensor) -> torch.Tensor:
    """The same model through the autograd function: ``(B, d)`` -> ``(B, K)``."""
    t = {k: torch.from_numpy(v) for k, v in params.items()}
    z = x @ t["pool"].T if "pool" in t else x
    out = hinge_forest(
        z,
        t["thresholds"],
        t["leaf_weights"],
        t["feature_index"].long(),
        spec.depth,
        spec.ferns,
        spec.reduction,
    )
    return t["bias"] + out


@pytest.mark.parametrize("options", SPECS)
def test_spec_forward_and_gradients_match_torch(options: dict) -> None:
    spec = HingeSpec(5, 3, n_trees=4, depth=3, **options)
    spec.output_bias = -0.7
    rng = np.random.default_rng(1)
    params = spec.init_params(rng)
    params["leaf_weights"] = rng.normal(size=params["leaf_weights"].shape)
    assert (params["bias"] == -0.7).all()
    frozen = spec.freeze(params)
    x = rng.normal(size=(20, 5))
    expected = torch_output(spec, params, torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(spec.forward_batch(frozen, x), expected, atol=1e-12)
    target = rng.normal(size=3)
    for row in x[:5]:
        np.testing.assert_allclose(
            spec.forward(frozen, row).output, spec.forward_batch(frozen, row[None])[0]
        )
        grads = spec.gradients(params, row, lambda out: 2.0 * (out - target), rng)
        leaves = {k: torch.from_numpy(v).requires_grad_() for k, v in params.items()}
        z = torch.from_numpy(row[None])
        if spec.pool:
            z = z @ leaves["pool"].T
        out = leaves["bias"] + hinge_forest(
            z,
            leaves["thresholds"],
            leaves["leaf_weights"],
            leaves["feature_index"].detach().long(),
            spec.depth,
            spec.ferns,
            spec.reduction,
        )
        ((out[0] - torch.from_numpy(target)) ** 2).sum().backward()
        assert set(grads) == {"thresholds", "leaf_weights", "bias"} | (
            {"pool"} if spec.pool else set()
        )
        for name, g in grads.items():
            np.testing.assert_allclose(g, leaves[name].grad.numpy(), atol=1e-12)  # type: ignore[union-attr]


@pytest.mark.parametrize("options", SPECS)
def test_batched_gradients_equal_the_per_example_sum(options: dict) -> None:
    spec = HingeSpec(5, 3, n_trees=4, depth=3, **options)
    rng = np.random.default_rng(2)
    params = spec.init_params(rng)
    params["leaf_weights"] = rng.normal(size=params["leaf_weights"].shape)
    x = rng.normal(size=(9, 5))
    targets = rng.normal(size=(9, 3))
    upstreams = [lambda out, t=t: 2.0 * (out - t) for t in targets]
    batch = spec.gradients_batch(params, x, upstreams, rng)
    singles = [spec.gradients(params, row, up, rng) for row, up in zip(x, upstreams, strict=True)]
    assert set(batch) == set(singles[0])
    for name, g in batch.items():
        np.testing.assert_allclose(g, sum(s[name] for s in singles), atol=1e-12)


def config(**overrides: object) -> dict:
    base: dict = {
        "kind": "hinge",
        "n_features": 4,
        "n_actions": 3,
        "n_trees": 5,
        "height": 3,
        "learning_rate": 0.05,
        "accumulate": 2,
        "seed": 3,
    }
    return {**base, **overrides}


def stream(learner: GradientBandit, x: np.ndarray, start: int, stop: int) -> list[int]:
    actions = []
    for i in range(start, stop):
        d = learner.act(x[i])
        learner.learn(d, Feedback(loss=float(d.action != int(x[i, 0] > 0))))
        actions.append(d.action)
    return actions


@pytest.mark.parametrize("options", [{}, {"ferns": True, "pool": 6}])
def test_seeded_runs_identical_and_checkpoint_round_trip(options: dict) -> None:
    x = np.random.default_rng(0).normal(size=(400, 4))
    a, b = (build_learner(config(options=options)) for _ in range(2))
    assert isinstance(a, GradientBandit) and isinstance(b, GradientBandit)
    assert stream(a, x, 0, 200) == stream(b, x, 0, 200)
    restored = loads(dumps(a))
    assert isinstance(restored, GradientBandit)
    assert restored.version == a.version > 0
    assert stream(restored, x, 200, 400) == stream(a, x, 200, 400)
    for name, p in a.parameters().items():
        np.testing.assert_array_equal(p, restored.parameters()[name])
    start = build_learner(config(options=options))
    assert isinstance(start, GradientBandit)
    init, learned = start.parameters(), a.parameters()
    np.testing.assert_array_equal(init["feature_index"], learned["feature_index"])  # fixed
    assert not np.array_equal(init["thresholds"], learned["thresholds"])  # learned
    json.dumps(a.export_model())


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"depth": 3}, "options.depth"),
        ({"ferns": "yes"}, "options.ferns"),
        ({"pool": -1}, "options.pool"),
        ({"pool": 5000}, "options.pool"),
        ({"reduction": "none"}, "options.reduction"),
    ],
)
def test_bad_options_name_the_field(options: dict, field: str) -> None:
    with pytest.raises(ValueError, match=field):
        build_learner(config(options=options))


def test_kind_registered_and_regression_learns_finite() -> None:
    assert "hinge" in known_kinds()
    learner = build_learner(
        {"kind": "hinge", "task": "regression", "n_features": 3, "learning_rate": 0.05}
    )
    x = np.random.default_rng(1).normal(size=(200, 3))
    for row in x:
        d = learner.act(row)
        assert d.value is not None
        learner.learn(d, Feedback(loss=(d.value - row.sum()) ** 2))
    assert np.isfinite(learner.predict(x)).all()
    with pytest.raises(InvalidInput):
        learner.act([1.0, float("nan"), 0.0])


def test_hinge_bandit_learns_pendigits_well_above_uniform() -> None:
    ds = load("pendigits")
    learner = build_learner(
        {
            "kind": "hinge",
            "n_features": ds.n_features,
            "n_actions": ds.n_classes,
            "learning_rate": 1e-2,
        }
    )
    order = np.random.default_rng(0).permutation(len(ds.y_train))[:3000]
    correct = 0.0
    for i in order:
        d = learner.act(ds.X_train[i])
        loss = float(d.action != ds.y_train[i])
        learner.learn(d, Feedback(loss=loss))
        correct += 1.0 - loss
    assert correct / len(order) > 0.3  # uniform random: 0.1
