"""The numpy TEL (FrozenTEL): same numbers as the torch passes, only reachable nodes visited."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from banditree.models.tel.dense import (
    dense_reachable_leaf_counts,
    dense_smooth_step_ensemble,
    leaf_probabilities,
)
from banditree.models.tel.dense_grad import dense_forward, dense_gradients
from banditree.models.tel.frozen import FrozenTEL
from banditree.models.tel.function import tree_ensemble
from banditree.models.tel.smooth_step import smooth_step

CASES = [
    # depth, n_trees, gamma, weight scale (x 0.01 uniform init): soft, mixed, mostly hard
    (1, 1, 1.0, 1.0),
    (3, 4, 0.5, 40.0),
    (5, 2, 1.0, 80.0),
    (6, 10, 1.0, 30.0),
    (6, 10, 2.0, 150.0),
]


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def make(depth: int, n_trees: int, gamma: float, scale: float, p: int = 6, k: int = 3) -> FrozenTEL:
    rng = np.random.default_rng(depth * 100 + n_trees)
    w = rng.uniform(-0.01, 0.01, size=(n_trees, (1 << depth) - 1, p)) * scale
    o = rng.normal(size=(n_trees, 1 << depth, k))
    return FrozenTEL(w, o, gamma)


def contexts(n: int, p: int = 6) -> np.ndarray:
    return np.random.default_rng(7).normal(size=(n, p))


def node_probabilities(frozen: FrozenTEL, x: np.ndarray, level: int) -> np.ndarray:
    """Dense ``P(x -> node)`` of every node of ``level``, flattened ``tree * 2**l + pos``."""
    w = torch.from_numpy(frozen.node_weights)
    z = torch.einsum("p,mip->mi", torch.from_numpy(x), w)
    s = smooth_step(z, frozen.gamma)[:, : (1 << level) - 1]
    return leaf_probabilities(s, level).reshape(-1).numpy()


@pytest.mark.parametrize(("depth", "n_trees", "gamma", "scale"), CASES)
def test_outputs_equal_torch_conditional_and_dense(
    depth: int, n_trees: int, gamma: float, scale: float
) -> None:
    frozen = make(depth, n_trees, gamma, scale)
    xs = contexts(25)
    w, o, xt = (torch.from_numpy(a) for a in (frozen.node_weights, frozen.leaf_weights, xs))
    dense = dense_smooth_step_ensemble(xt, w, o, gamma).sum(dim=1).numpy()
    with torch.no_grad():
        conditional, counts = tree_ensemble(xt, w, o, gamma)
    reachable = dense_reachable_leaf_counts(xt, w, gamma).numpy()
    batch, batch_counts = frozen.forward_batch(xs)
    np.testing.assert_allclose(batch, dense, rtol=0, atol=1e-12)
    np.testing.assert_allclose(batch, conditional.sum(dim=1).numpy(), rtol=0, atol=1e-12)
    np.testing.assert_array_equal(batch_counts, reachable)
    np.testing.assert_array_equal(batch_counts, counts.numpy())
    for x, row, count in zip(xs, dense, reachable, strict=True):
        out, leaves = frozen.forward_one(x)
        np.testing.assert_allclose(out, row, rtol=0, atol=1e-12)
        assert leaves == count


@pytest.mark.parametrize(("depth", "n_trees", "gamma", "scale"), CASES)
def test_single_context_visits_exactly_the_reachable_nodes(
    depth: int, n_trees: int, gamma: float, scale: float
) -> None:
    frozen = make(depth, n_trees, gamma, scale)
    for x in contexts(10):
        visited: list[np.ndarray] = []
        frozen.forward_one(x, visited)
        assert len(visited) == depth + 1  # every level, then the leaves
        for level, columns in enumerate(visited):
            reachable = np.flatnonzero(node_probabilities(frozen, x, level) > 0)
            assert len(set(columns.tolist())) == columns.size  # each node once
            np.testing.assert_array_equal(np.sort(columns), reachable)


def test_hard_routing_skips_most_nodes() -> None:
    """Large weights: mostly one path per tree, far fewer dot products than nodes."""
    frozen = make(6, 10, 1.0, 400.0)
    visited: list[np.ndarray] = []
    frozen.forward_one(contexts(1)[0], visited)
    computed = sum(c.size for c in visited[:-1])
    assert computed < 0.25 * 10 * 63
    levels = frozen.route(contexts(1))
    assert [lv.position.size for lv in levels] == [c.size for c in visited]


@pytest.mark.parametrize(("depth", "n_trees", "gamma", "scale"), CASES)
def test_gradients_equal_torch_autograd(
    depth: int, n_trees: int, gamma: float, scale: float
) -> None:
    frozen = make(depth, n_trees, gamma, scale)
    xs = contexts(9)
    grad_out = np.random.default_rng(3).normal(size=(9, 3))
    grad_w, grad_o = frozen.gradients(xs, frozen.route(xs), grad_out)
    w = torch.tensor(frozen.node_weights, requires_grad=True)
    o = torch.tensor(frozen.leaf_weights, requires_grad=True)
    out = dense_smooth_step_ensemble(torch.from_numpy(xs), w, o, gamma).sum(dim=1)
    out.backward(torch.from_numpy(grad_out))
    assert w.grad is not None and o.grad is not None
    np.testing.assert_allclose(grad_w, w.grad.numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(grad_o, o.grad.numpy(), rtol=0, atol=1e-10)


@pytest.mark.parametrize(("depth", "n_trees", "gamma", "scale"), CASES)
def test_dense_gradients_equal_the_conditional_pass_and_torch(
    depth: int, n_trees: int, gamma: float, scale: float
) -> None:
    """The update's pass over every node: the outputs and gradients of Algorithms 1 and 2."""
    frozen = make(depth, n_trees, gamma, scale)
    xs = contexts(9)
    grad_out = np.random.default_rng(3).normal(size=(9, 3))
    levels = frozen.route(xs)
    forward = dense_forward(frozen, xs)
    np.testing.assert_allclose(forward.output, frozen.outputs(levels[-1], 9), rtol=0, atol=1e-12)
    grad_w, grad_o = dense_gradients(frozen, xs, forward, grad_out)
    want_w, want_o = frozen.gradients(xs, levels, grad_out)
    np.testing.assert_allclose(grad_w, want_w, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(grad_o, want_o, rtol=1e-12, atol=1e-12)
    w = torch.tensor(frozen.node_weights, requires_grad=True)
    o = torch.tensor(frozen.leaf_weights, requires_grad=True)
    out = dense_smooth_step_ensemble(torch.from_numpy(xs), w, o, gamma).sum(dim=1)
    out.backward(torch.from_numpy(grad_out))
    assert w.grad is not None and o.grad is not None
    np.testing.assert_allclose(grad_w, w.grad.numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(grad_o, o.grad.numpy(), rtol=0, atol=1e-10)
    # a hard node (S' = 0) and an unreachable one get exactly zero, as in the conditional pass
    np.testing.assert_array_equal(grad_w == 0.0, want_w == 0.0)


def test_malformed_trees_are_refused() -> None:
    with pytest.raises(ValueError, match="do not form perfect trees"):
        FrozenTEL(np.zeros((2, 6, 3)), np.zeros((2, 8, 1)), 1.0)
    with pytest.raises(ValueError, match="do not form perfect trees"):
        FrozenTEL(np.zeros((2, 7, 3)), np.zeros((2, 4, 1)), 1.0)


@pytest.mark.parametrize(("depth", "n_trees", "gamma", "scale"), CASES)
def test_dense_and_conditional_passes_agree(
    depth: int, n_trees: int, gamma: float, scale: float
) -> None:
    frozen = make(depth, n_trees, gamma, scale)
    xs = contexts(30)
    dense, dense_counts = frozen.forward_batch_dense(xs)
    conditional, conditional_counts = frozen.forward_batch_conditional(xs)
    np.testing.assert_allclose(dense, conditional, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(dense_counts, conditional_counts)
    for x, row, count in zip(xs, conditional, conditional_counts, strict=True):
        for out, leaves in (frozen.forward_one_dense(x), frozen.forward_one_conditional(x)):
            np.testing.assert_allclose(out, row, rtol=0, atol=1e-12)
            assert leaves == count


def test_large_ensembles_take_the_conditional_pass() -> None:
    small, large = make(6, 10, 1.0, 30.0), make(10, 5, 1.0, 300.0)
    assert small.dense and not large.dense  # 640 and 5,120 leaves
    xs = contexts(3)
    out, counts = large.forward_batch(xs)
    want, want_counts = large.forward_batch_dense(xs)
    np.testing.assert_allclose(out, want, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(counts, want_counts)
    assert large.forward_one(xs[0])[1] == want_counts[0]


def test_dense_batch_pass_in_several_chunks_equals_the_conditional_pass() -> None:
    """Ten trees of depth 6: 120 contexts run as three cache-sized chunks."""
    frozen = make(6, 10, 1.0, 30.0)
    xs = np.random.default_rng(11).normal(size=(120, 6))
    dense, dense_counts = frozen.forward_batch_dense(xs)
    conditional, conditional_counts = frozen.forward_batch_conditional(xs)
    np.testing.assert_allclose(dense, conditional, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(dense_counts, conditional_counts)
