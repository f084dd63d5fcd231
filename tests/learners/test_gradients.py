"""The hand-derived numpy gradients of the hot path equal torch autograd's (Algorithm 2)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from banditree.models.dgt.forest_spec import DGTForestSpec
from banditree.models.dgt.spec import DGTSpec
from banditree.models.dgt.tree import DGTree
from banditree.models.linear import LinearSpec

N_FEATURES, N_OUTPUTS, HEIGHT, BATCH = 6, 4, 4, 9


def torch_gradients(
    params: dict[str, np.ndarray], hidden: tuple[int, ...], x: np.ndarray, g: np.ndarray
) -> dict[str, np.ndarray]:
    """Autograd gradients of ``sum_b <tree(x_b), g_b>`` for a float64 DGTree holding ``params``.

    The shared ``bias`` is added to every leaf, so its gradient is the sum of the
    leaves' gradients.
    """
    tree = DGTree(N_FEATURES, N_OUTPUTS, HEIGHT, hidden).double()
    with torch.no_grad():
        for i, layer in enumerate(tree.layers):
            layer.copy_(torch.from_numpy(params[f"W{i}"]))
        tree.theta.copy_(torch.from_numpy(params["theta"] + params["bias"]))
    out = tree(torch.from_numpy(x))
    (out * torch.from_numpy(g)).sum().backward()
    grads = {f"W{i}": layer.grad.numpy() for i, layer in enumerate(tree.layers)}
    assert tree.theta.grad is not None
    grads["theta"] = tree.theta.grad.numpy()
    grads["bias"] = grads["theta"].sum(axis=0)
    return grads


@pytest.mark.parametrize("hidden", [(), (7, 5)], ids=["L1", "L3"])
def test_numpy_gradients_equal_autograd(hidden: tuple[int, ...]) -> None:
    rng = np.random.default_rng(len(hidden))
    spec = DGTSpec(N_FEATURES, N_OUTPUTS, HEIGHT, hidden)
    for trial in range(5):
        params = spec.init_params(rng)
        params["W0"] *= 1.0 + trial  # more and more nodes outside |a| <= 1
        params["theta"] = rng.normal(size=params["theta"].shape)
        params["bias"] = rng.normal(size=N_OUTPUTS)
        x = rng.normal(size=(BATCH, N_FEATURES))
        g = rng.normal(size=(BATCH, N_OUTPUTS))
        upstreams = [lambda out, row=row: row for row in g]
        expected = torch_gradients(params, hidden, x, g)
        batch = spec.gradients_batch(params, x, upstreams, rng)
        assert set(batch) == set(expected)
        for name in expected:
            np.testing.assert_allclose(batch[name], expected[name], atol=1e-6, rtol=0)
        # one example at a time, summed, is the same
        for name, value in batch.items():
            single = sum(
                spec.gradients(params, x[b], upstreams[b], rng)[name] for b in range(BATCH)
            )
            np.testing.assert_allclose(value, single, atol=1e-12, rtol=0)


def test_upstream_sees_the_reached_leaf_at_the_given_parameters() -> None:
    rng = np.random.default_rng(5)
    spec = DGTSpec(N_FEATURES, N_OUTPUTS, HEIGHT)
    params = spec.init_params(rng)
    params["theta"] = rng.normal(size=params["theta"].shape)
    frozen = spec.freeze(params)
    x = rng.normal(size=(BATCH, N_FEATURES))
    seen: list[np.ndarray] = []
    spec.gradients_batch(params, x, [lambda out: seen.append(out.copy()) or out] * BATCH, rng)
    np.testing.assert_array_equal(np.stack(seen), frozen.predict(x))


@pytest.mark.parametrize(
    "spec",
    [
        LinearSpec(N_FEATURES, N_OUTPUTS),
        DGTForestSpec(N_FEATURES, N_OUTPUTS, 3, n_trees=3),
        DGTForestSpec(N_FEATURES, N_OUTPUTS, 3, n_trees=3, bagging=False),
    ],
    ids=["linear", "dgt_forest", "dgt_forest_unbagged"],
)
def test_batched_gradients_equal_the_per_example_sum(spec: DGTSpec) -> None:
    rng = np.random.default_rng(9)
    params = spec.init_params(rng)
    x = rng.normal(size=(BATCH, N_FEATURES))
    g = rng.normal(size=(BATCH, N_OUTPUTS))
    upstreams = [lambda out, row=row: row for row in g]
    batch = spec.gradients_batch(params, x, upstreams, np.random.default_rng(1))
    singles_rng = np.random.default_rng(1)
    total: dict[str, np.ndarray] = {}
    for b in range(BATCH):
        for name, v in spec.gradients(params, x[b], upstreams[b], singles_rng).items():
            total[name] = total.get(name, 0.0) + v
    assert set(batch) == set(total)
    for name in total:
        np.testing.assert_allclose(batch[name], total[name], atol=1e-12, rtol=0)


@pytest.mark.parametrize("shared_bias", [True, False], ids=["bias", "no_bias"])
def test_linear_term_gradients_equal_autograd(shared_bias: bool) -> None:
    """``theta[leaf] + bias + linear @ x``: every gradient, the node weights' included."""
    rng = np.random.default_rng(11)
    spec = DGTSpec(N_FEATURES, N_OUTPUTS, HEIGHT, shared_bias=shared_bias, linear=True)
    for trial in range(4):
        params = spec.init_params(rng)
        params["W0"] *= 1.0 + trial
        params["theta"] = rng.normal(size=params["theta"].shape)
        params["linear"] = rng.normal(size=(N_OUTPUTS, N_FEATURES))
        if shared_bias:
            params["bias"] = rng.normal(size=N_OUTPUTS)
        x = rng.normal(size=(BATCH, N_FEATURES))
        g = rng.normal(size=(BATCH, N_OUTPUTS))
        # an upstream that depends on the output it is given: the full (linear-term) output
        targets = rng.normal(size=(BATCH, N_OUTPUTS))
        upstreams = [
            lambda out, t=t, row=row: row * (out - t) for t, row in zip(targets, g, strict=True)
        ]

        tree = DGTree(N_FEATURES, N_OUTPUTS, HEIGHT).double()
        linear = torch.tensor(params["linear"], requires_grad=True)
        bias = torch.tensor(params.get("bias", np.zeros(N_OUTPUTS)), requires_grad=True)
        with torch.no_grad():
            tree.layers[0].copy_(torch.from_numpy(params["W0"]))
            tree.theta.copy_(torch.from_numpy(params["theta"]))
        xt = torch.from_numpy(x)
        out = tree(xt) + bias + xt @ linear.T
        # the loss whose d/d out is row * (out - t)
        loss = 0.5 * (torch.from_numpy(g) * (out - torch.from_numpy(targets)) ** 2).sum()
        loss.backward()
        expected = {"W0": tree.layers[0].grad, "theta": tree.theta.grad, "linear": linear.grad}
        if shared_bias:
            expected["bias"] = bias.grad
        got = spec.gradients_batch(params, x, upstreams, rng)
        assert set(got) == set(expected)
        for name, value in expected.items():
            assert value is not None
            np.testing.assert_allclose(got[name], value.numpy(), atol=1e-9, rtol=0, err_msg=name)


def test_linear_term_gradient_equals_finite_differences() -> None:
    """The linear term and the bias enter the output linearly: central differences are exact."""
    rng = np.random.default_rng(12)
    spec = DGTSpec(N_FEATURES, N_OUTPUTS, HEIGHT, linear=True)
    params = spec.init_params(rng)
    params["theta"] = rng.normal(size=params["theta"].shape)
    params["linear"] = rng.normal(size=(N_OUTPUTS, N_FEATURES))
    x = rng.normal(size=(BATCH, N_FEATURES))
    targets = rng.normal(size=(BATCH, N_OUTPUTS))

    def loss(p: dict[str, np.ndarray]) -> float:
        out = spec.forward_batch(spec.freeze(p), x)
        return float(0.5 * ((out - targets) ** 2).sum())

    upstreams = [lambda out, t=t: out - t for t in targets]
    got = spec.gradients_batch(params, x, upstreams, rng)
    eps = 1e-6
    for name in ("linear", "bias"):
        numeric = np.zeros_like(params[name])
        for index in np.ndindex(params[name].shape):
            plus = {k: v.copy() for k, v in params.items()}
            minus = {k: v.copy() for k, v in params.items()}
            plus[name][index] += eps
            minus[name][index] -= eps
            numeric[index] = (loss(plus) - loss(minus)) / (2 * eps)
        np.testing.assert_allclose(got[name], numeric, atol=1e-5, rtol=0, err_msg=name)


@pytest.mark.parametrize(
    ("shared_bias", "linear", "hidden"),
    [(True, False, ()), (False, False, ()), (True, True, ()), (True, True, (4,))],
    ids=["bias", "no_bias", "linear", "hidden"],
)
def test_an_unbagged_forest_gives_every_tree_its_own_full_gradient(
    shared_bias: bool, linear: bool, hidden: tuple[int, ...]
) -> None:
    """Without bagging each tree learns every row with weight 1: its gradient is that of
    a lone DGT with its parameters (one stacked pass for the forest without hidden
    layers); with bagging some tree skips or repeats some row."""
    rng = np.random.default_rng(13)
    n_trees = 3
    x = rng.normal(size=(BATCH, N_FEATURES))
    g = rng.normal(size=(BATCH, N_OUTPUTS))
    targets = rng.normal(size=(BATCH, N_OUTPUTS))
    # an upstream that depends on the output it is given (the reached leaf's, plus terms)
    upstreams = [
        lambda out, t=t, row=row: row * (out - t) for t, row in zip(targets, g, strict=True)
    ]
    kwargs = {"hidden": hidden, "shared_bias": shared_bias, "linear": linear}
    lone = DGTSpec(N_FEATURES, N_OUTPUTS, 3, **kwargs)
    by_bagging = {}
    for bagging in (False, True):
        spec = DGTForestSpec(N_FEATURES, N_OUTPUTS, 3, n_trees=n_trees, bagging=bagging, **kwargs)
        params = {
            k: v + rng.normal(size=v.shape)
            for k, v in spec.init_params(np.random.default_rng(2)).items()
        }
        grads = spec.gradients_batch(params, x, upstreams, np.random.default_rng(3))
        by_bagging[bagging] = [
            (
                {k[3:]: v for k, v in grads.items() if k.startswith(f"t{i}.")},
                lone.gradients_batch(
                    {k[3:]: v for k, v in params.items() if k.startswith(f"t{i}.")},
                    x,
                    upstreams,
                    rng,
                ),
            )
            for i in range(n_trees)
        ]
    for tree, single in by_bagging[False]:
        assert set(tree) == set(single)
        for name in single:
            np.testing.assert_allclose(tree[name], single[name], atol=1e-12, rtol=0)
    assert any(
        not np.allclose(tree.get("theta", 0.0), single["theta"])
        for tree, single in by_bagging[True]
    )
