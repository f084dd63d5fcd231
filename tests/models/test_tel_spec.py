"""TEL-Bandit (kind "tel"): learner contract, gradients, options, checkpoints."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from banditree.datasets import load
from banditree.learners import Feedback, build_learner
from banditree.models.spec import UpstreamFn, reward_prior
from banditree.models.tel.dense import dense_smooth_step_ensemble
from banditree.models.tel.spec import DEFAULT_GAMMA, TELSpec
from banditree.persistence import dumps, loads

pytestmark = pytest.mark.usefixtures("one_torch_thread")


def config(**overrides: object) -> dict[str, object]:
    base: dict[str, object] = {
        "kind": "tel",
        "n_features": 16,
        "n_actions": 10,
        "height": 4,
        "n_trees": 3,
        "learning_rate": 1e-2,
        "accumulate": 2,
        "seed": 5,
    }
    return {**base, **overrides}


def stream(n: int) -> tuple[np.ndarray, np.ndarray]:
    ds = load("pendigits")
    order = np.random.default_rng(0).permutation(len(ds.y_train))[:n]
    return ds.X_train[order], ds.y_train[order]


def run(learner: object, xs: np.ndarray, ys: np.ndarray) -> list[tuple[int, float, float]]:
    out = []
    for x, y in zip(xs, ys, strict=True):
        d = learner.act(x)  # type: ignore[attr-defined]
        learner.learn(d, Feedback(loss=float(d.action != y)))  # type: ignore[attr-defined]
        out.append((d.action, d.propensity, d.extras["reachable_leaves"]))
    return out


def test_gradients_match_dense_autograd() -> None:
    spec = TELSpec(5, 3, depth=5, n_trees=2, gamma=0.6)
    params = spec.init_params(np.random.default_rng(0))
    params["W"] = params["W"] * 80.0  # spread routing across hard and soft nodes
    x = np.random.default_rng(1).normal(size=5)
    target = np.array([0.3, -1.0, 2.0])
    grads = spec.gradients(params, x, lambda out: out - target, np.random.default_rng(0))
    w = torch.tensor(params["W"], requires_grad=True)
    o = torch.tensor(params["O"], requires_grad=True)
    out = dense_smooth_step_ensemble(torch.tensor(x)[None], w, o, 0.6).sum(dim=1)[0]
    (0.5 * (out - torch.tensor(target)).square().sum()).backward()
    assert w.grad is not None and o.grad is not None
    np.testing.assert_allclose(grads["W"], w.grad.numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(grads["O"], o.grad.numpy(), rtol=0, atol=1e-10)
    assert np.abs(grads["W"]).sum() > 0


def test_batched_gradients_match_dense_autograd_and_see_each_output() -> None:
    """One conditional pass over the buffered examples: the sum of their gradients."""
    spec = TELSpec(5, 3, depth=4, n_trees=3, gamma=0.8)
    params = spec.init_params(np.random.default_rng(4))
    params["W"] = params["W"] * 60.0
    xs = np.random.default_rng(5).normal(size=(7, 5))
    targets = np.random.default_rng(6).normal(size=(7, 3))
    seen: list[np.ndarray] = []

    def upstream(row: int) -> UpstreamFn:
        def d_loss(out: np.ndarray) -> np.ndarray:
            seen.append(out.copy())
            return out - targets[row]

        return d_loss

    upstreams = [upstream(b) for b in range(7)]
    grads = spec.gradients_batch(params, xs, upstreams, np.random.default_rng(0))
    np.testing.assert_allclose(np.stack(seen), spec.forward_batch(spec.freeze(params), xs))
    w = torch.tensor(params["W"], requires_grad=True)
    o = torch.tensor(params["O"], requires_grad=True)
    out = dense_smooth_step_ensemble(torch.tensor(xs), w, o, 0.8).sum(dim=1)
    (0.5 * (out - torch.tensor(targets)).square().sum()).backward()
    assert w.grad is not None and o.grad is not None
    np.testing.assert_allclose(grads["W"], w.grad.numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(grads["O"], o.grad.numpy(), rtol=0, atol=1e-10)
    assert np.abs(grads["W"]).sum() > 0


def test_forward_reports_reachable_leaves_and_matches_batch() -> None:
    spec = TELSpec(4, 2, depth=6, n_trees=3, gamma=1.0)
    params = spec.init_params(np.random.default_rng(2))
    params["W"] = params["W"] * 150.0
    frozen = spec.freeze(params)
    xs = np.random.default_rng(3).normal(size=(20, 4))
    batch = spec.forward_batch(frozen, xs)
    for x, row in zip(xs, batch, strict=True):
        out = spec.forward(frozen, x)
        np.testing.assert_allclose(out.output, row, rtol=0, atol=1e-12)
        leaves = out.extras["reachable_leaves"]
        assert out.extras["reachable_leaves_total"] == pytest.approx(3 * leaves)
        assert 1.0 <= leaves <= 64.0
    assert 1.0 < np.mean([spec.forward(frozen, x).extras["reachable_leaves"] for x in xs]) < 64


def test_learner_starts_at_reward_prior_and_reports_leaves() -> None:
    learner = build_learner(config())
    d = learner.act(np.zeros(16))
    # fresh weights are U(-0.01, 0.01): every node is fractional, all 16 leaves reached
    assert d.extras["reachable_leaves"] == 16.0
    frozen = learner._snapshot.frozen  # type: ignore[attr-defined]
    out = learner.model.forward(frozen, np.ones(16))  # type: ignore[attr-defined]
    np.testing.assert_allclose(out.output, reward_prior(10, "identity"), atol=0.03)


def test_seeded_runs_identical_and_different_seeds_differ() -> None:
    xs, ys = stream(150)
    first = run(build_learner(config()), xs, ys)
    second = run(build_learner(config()), xs, ys)
    other = run(build_learner(config(seed=6)), xs, ys)
    assert first == second
    assert first != other


def test_checkpoint_round_trip_continues_identically() -> None:
    xs, ys = stream(160)
    learner = build_learner(config(options={"gamma": 0.5}))
    run(learner, xs[:81], ys[:81])  # odd count: one gradient is pending in the accumulator
    restored = loads(dumps(learner))
    assert restored.version == learner.version and restored.config() == learner.config()
    assert run(restored, xs[81:], ys[81:]) == run(learner, xs[81:], ys[81:])
    np.testing.assert_array_equal(restored.predict(xs), learner.predict(xs))


def test_learns_above_uniform_random_on_real_data() -> None:
    xs, ys = stream(1500)
    history = run(build_learner(config(options={"gamma": 1.0})), xs, ys)
    late = [a == y for (a, _, _), y in zip(history[-500:], ys[-500:], strict=True)]
    assert np.mean(late) > 3 * 0.1  # 10 classes: uniform random gets 0.1
    # routing hardens as the node weights grow
    assert np.mean([h[2] for h in history[-200:]]) < np.mean([h[2] for h in history[:20]])


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"gama": 1.0}, r"options: unknown key\(s\) \['gama'\]"),
        ({"gamma": 0.0}, "options.gamma must be a finite number > 0"),
        ({"gamma": "big"}, "options.gamma must be a number"),
    ],
)
def test_bad_options_are_refused_with_the_field(options: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        build_learner(config(options=options))


def test_default_gamma_and_config_round_trip() -> None:
    learner = build_learner(config())
    spec = learner.model  # type: ignore[attr-defined]
    assert isinstance(spec, TELSpec)
    assert spec.gamma == DEFAULT_GAMMA and spec.depth == 4 and spec.n_trees == 3
    exported = learner.export_model()
    assert exported["kind"] == "tel"
    assert np.asarray(exported["node_weights"]).shape == (3, 15, 16)
