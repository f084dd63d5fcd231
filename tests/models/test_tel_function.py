"""Conditional TEL passes (Algorithms 1-2) against gradcheck and the dense reference."""

from __future__ import annotations

import pytest
import torch

from banditree.models.tel.dense import (
    dense_reachable_leaf_counts,
    dense_smooth_step_ensemble,
    leaf_probabilities,
)
from banditree.models.tel.function import route_conditional, tree_ensemble
from banditree.models.tel.smooth_step import check_gamma, smooth_step, smooth_step_derivative

F64 = torch.float64


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def random_case(
    seed: int, batch: int, p: int, k: int, n_trees: int, depth: int, w_scale: float
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(batch, p, generator=gen, dtype=F64)
    w = w_scale * torch.randn(n_trees, (1 << depth) - 1, p, generator=gen, dtype=F64)
    o = torch.randn(n_trees, 1 << depth, k, generator=gen, dtype=F64)
    return x, w, o


def fractional_margin(x: torch.Tensor, w: torch.Tensor, gamma: float) -> float:
    """Distance of the nearest <w_i, x> to a kink of S (finite differences need room)."""
    z = torch.einsum("bp,mip->bmi", x, w)
    return float((z.abs() - gamma / 2).abs().min())


def test_paper_test_vector() -> None:
    w = torch.tensor([1.0, 1.0], dtype=F64)
    x = torch.tensor([0.1, 0.0], dtype=F64)
    assert smooth_step(w @ x, 1.0).item() == pytest.approx(0.648, abs=1e-12)
    # the layer itself: one depth-1 tree, leaf outputs 1 (left) and 0 (right)
    out, counts = tree_ensemble(
        x[None], w.reshape(1, 1, 2), torch.tensor([[[1.0], [0.0]]], dtype=F64), 1.0
    )
    assert out.item() == pytest.approx(0.648, abs=1e-12)
    assert counts.tolist() == [2]


@pytest.mark.parametrize("gamma", [1e-3, 0.1, 0.3, 0.5, 0.7, 1.0, 4.0])
def test_smooth_step_shape_and_derivative(gamma: float) -> None:
    t = torch.linspace(-gamma, gamma, 2001, dtype=F64, requires_grad=True)
    s = smooth_step(t, gamma)
    assert torch.all(s[t <= -gamma / 2] == 0) and torch.all(s[t >= gamma / 2] == 1)
    inside = (t.abs() < gamma / 2).detach()
    assert torch.all((s[inside] > 0) & (s[inside] < 1))
    (grad,) = torch.autograd.grad(s.sum(), t)
    torch.testing.assert_close(grad, smooth_step_derivative(t.detach(), gamma))
    assert torch.all(torch.diff(s) >= 0)


@pytest.mark.parametrize("gamma", [0.0, -1.0, float("nan"), float("inf")])
def test_gamma_must_be_positive_and_finite(gamma: float) -> None:
    with pytest.raises(ValueError, match="gamma must be a finite number > 0"):
        check_gamma(gamma)


GRADCHECK_CASES = [
    # depth, n_trees, gamma, w_scale
    (1, 1, 1.0, 0.3),
    (2, 3, 0.5, 0.4),
    (3, 2, 1.0, 1.0),
    (4, 1, 0.1, 0.1),
    (5, 3, 2.0, 0.8),
    (6, 1, 0.3, 0.5),
]


@pytest.mark.parametrize(("depth", "n_trees", "gamma", "w_scale"), GRADCHECK_CASES)
def test_gradcheck_mixed_routing(depth: int, n_trees: int, gamma: float, w_scale: float) -> None:
    x, w, o = random_case(depth, 6, 4, 3, n_trees, depth, w_scale)
    assert fractional_margin(x, w, gamma) > 1e-4  # no <w, x> sits on a kink of S
    routing = route_conditional(x, w, gamma)
    assert routing.frac_z.numel() > 0  # some soft routing ...
    assert routing.leaf_prob.numel() < x.shape[0] * n_trees * (1 << depth) or depth == 1
    inputs = (x.requires_grad_(), w.requires_grad_(), o.requires_grad_())
    assert torch.autograd.gradcheck(lambda a, b, c: tree_ensemble(a, b, c, gamma)[0], inputs)


@pytest.mark.parametrize(("depth", "n_trees"), [(2, 1), (4, 3), (6, 1)])
def test_gradcheck_every_node_fractional(depth: int, n_trees: int) -> None:
    """Every <w_i, x> lies strictly inside (-gamma/2, gamma/2): all leaves reachable."""
    x, w, o = random_case(10 + depth, 5, 3, 2, n_trees, depth, 0.05)
    gamma = 2.0
    z = torch.einsum("bp,mip->bmi", x, w)
    assert float(z.abs().max()) < gamma / 2 - 1e-3
    out, counts = tree_ensemble(x, w, o, gamma)
    assert counts.tolist() == [n_trees << depth] * x.shape[0]
    torch.testing.assert_close(out, dense_smooth_step_ensemble(x, w, o, gamma), rtol=0, atol=1e-12)
    inputs = (x.requires_grad_(), w.requires_grad_(), o.requires_grad_())
    assert torch.autograd.gradcheck(lambda a, b, c: tree_ensemble(a, b, c, gamma)[0], inputs)


@pytest.mark.parametrize(("depth", "n_trees", "gamma"), [(3, 2, 0.01), (6, 2, 1e-3)])
def test_gradcheck_hard_routed_everywhere(depth: int, n_trees: int, gamma: float) -> None:
    """No fractional node: one leaf per tree, zero gradient for inputs and node weights."""
    x, w, o = random_case(20 + depth, 4, 3, 2, n_trees, depth, 1.0)
    assert (
        fractional_margin(x, w, gamma) > 1e-4
        and float(torch.einsum("bp,mip->bmi", x, w).abs().min()) > gamma / 2
    )
    out, counts = tree_ensemble(x, w, o, gamma)
    assert counts.tolist() == [n_trees] * x.shape[0]
    inputs = (x.requires_grad_(), w.requires_grad_(), o.requires_grad_())
    out, _ = tree_ensemble(*inputs, gamma)
    gx, gw, go = torch.autograd.grad(out.sum(), inputs)
    assert torch.all(gx == 0) and torch.all(gw == 0)
    assert float(go.abs().sum()) > 0
    assert torch.autograd.gradcheck(lambda a, b, c: tree_ensemble(a, b, c, gamma)[0], inputs)


def test_gradcheck_on_the_region_boundary() -> None:
    """<w, x> exactly at +-gamma/2: hard routed, S' = 0 there, still differentiable."""
    gamma = 1.0
    x = torch.tensor([[0.5, 0.0], [-0.5, 0.0], [0.25, 0.0]], dtype=F64)
    w = torch.tensor([[[1.0, 0.0], [1.0, 1.0], [2.0, 0.0]]], dtype=F64)
    o = torch.tensor([[[1.0], [2.0], [3.0], [4.0]]], dtype=F64)
    routing = route_conditional(x, w, gamma)
    assert sorted(routing.frac_sample.tolist()) == [2, 2]  # x3 at the root and node 1
    inputs = (x.requires_grad_(), w.requires_grad_(), o.requires_grad_())
    assert torch.autograd.gradcheck(lambda a, b, c: tree_ensemble(a, b, c, gamma)[0], inputs)


@pytest.mark.parametrize(
    ("depth", "n_trees", "gamma", "w_scale"),
    [(1, 1, 1.0, 1.0), (3, 5, 0.5, 1.0), (6, 3, 1.0, 0.5), (8, 2, 0.2, 1.0), (10, 2, 2.0, 0.7)],
)
def test_conditional_matches_dense(depth: int, n_trees: int, gamma: float, w_scale: float) -> None:
    x, w, o = random_case(100 + depth, 32, 6, 4, n_trees, depth, w_scale)
    grad_out = torch.randn(32, n_trees, 4, generator=torch.Generator().manual_seed(1), dtype=F64)
    results = []
    for conditional in (True, False):
        inputs = (
            x.clone().requires_grad_(),
            w.clone().requires_grad_(),
            o.clone().requires_grad_(),
        )
        if conditional:
            out = tree_ensemble(*inputs, gamma)[0]
        else:
            out = dense_smooth_step_ensemble(*inputs, gamma)
        results.append((out, *torch.autograd.grad(out, inputs, grad_out)))
    for name, cond, dense in zip(("output", "d/dx", "d/dW", "d/dO"), *results, strict=True):
        assert cond.shape == dense.shape, name
        torch.testing.assert_close(cond, dense, rtol=0, atol=1e-10, msg=name)
    counts = tree_ensemble(x, w, o, gamma)[1]
    assert torch.equal(counts, dense_reachable_leaf_counts(x, w, gamma))


def test_reachable_counts_and_fractional_tree_size() -> None:
    """|F| = U - 1 per (sample, tree): the fractional tree is a full binary tree."""
    x, w, _ = random_case(7, 40, 5, 2, 3, 7, 1.0)
    gamma = 0.8
    routing = route_conditional(x, w, gamma)
    leaves = torch.bincount(routing.leaf_column, minlength=40 * 3)
    frac = torch.bincount(
        routing.frac_sample * 3 + routing.frac_row // ((1 << 7) - 1), minlength=40 * 3
    )
    assert torch.equal(frac, leaves - 1)
    assert 1 < leaves.double().mean() < (1 << 7)
    # leaf probabilities of each (sample, tree) sum to one
    prob_sum = torch.zeros(40 * 3, dtype=F64).index_add_(0, routing.leaf_column, routing.leaf_prob)
    torch.testing.assert_close(prob_sum, torch.ones(40 * 3, dtype=F64))


def test_leaf_probabilities_layout_matches_walk() -> None:
    """Dense leaf order: leaf l of the left-to-right order, LEFT child with prob S."""
    s = torch.tensor([[0.3, 1.0, 0.25]], dtype=F64)  # root, left child, right child
    expected = [0.3 * 1.0, 0.0, 0.7 * 0.25, 0.7 * 0.75]
    torch.testing.assert_close(leaf_probabilities(s, 2)[0], torch.tensor(expected, dtype=F64))
