"""Random hinge trees and ferns: traversal, eq. 10 outputs, sparse gradients (eqs. 11-12)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from banditree.models.hinge.function import hinge_forest, hinge_traverse_t
from banditree.models.hinge.ops import (
    hinge_gradients,
    hinge_traverse,
    hinge_traverse_one,
    init_forest,
)

SETTINGS = [(1, False), (3, False), (5, False), (1, True), (3, True), (5, True)]


def naive_traversal(
    z: np.ndarray, features: np.ndarray, thresholds: np.ndarray, depth: int, ferns: bool
) -> tuple[int, float, int]:
    """Algorithm 3 for one example and one tree, written out literally."""
    leaf, v, best_v = 0, 0, 0
    best_r = z[features[0]] - thresholds[0]
    for i in range(depth):
        k = i if ferns else v
        r = z[features[k]] - thresholds[k]
        if abs(r) < abs(best_r):
            best_r, best_v = r, k
        leaf = 2 * leaf + int(r > 0)
        v = 2 * v + int(r > 0) + 1
    return leaf, float(best_r), best_v


def eq10_forest(z: torch.Tensor, thr: torch.Tensor, w: torch.Tensor, f: np.ndarray, depth: int, ferns: bool) -> torch.Tensor:  # fmt: skip
    """Eq. 10 summed over EVERY leaf (min over the path of ReLU(d(z_f - t))), per tree: ``(B, T, K)``.

    Independent of the traversal: plain torch ops, differentiated by torch autograd.
    """
    n_trees = thr.shape[0]
    trees = []
    for m in range(n_trees):
        total = z.new_zeros(z.shape[0], w.shape[2])
        for leaf in range(1 << depth):
            conditions = []
            node = 0
            for level in range(depth):
                right = (leaf >> (depth - 1 - level)) & 1
                k = level if ferns else node
                r = z[:, int(f[m, k])] - thr[m, k]
                conditions.append(torch.relu(r if right else -r))
                node = 2 * node + 1 + right
            indicator = torch.stack(conditions).min(dim=0).values  # (B,)
            total = total + indicator[:, None] * w[m, leaf]
        trees.append(total)
    return torch.stack(trees, dim=1)


def problem(
    seed: int, depth: int, ferns: bool, n_examples: int = 6, n_trees: int = 4, n_out: int = 3
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Inputs and a forest with every margin, and every gap between path margins, > 1e-3."""
    rng = np.random.default_rng(seed)
    n_inputs = 5
    features, thresholds, weights = init_forest(rng, n_trees, depth, n_inputs, n_out, ferns)
    weights = rng.normal(size=weights.shape)  # O(1) weights make gradient errors visible
    while True:
        z = rng.normal(0.0, 2.0, size=(n_examples, n_inputs))
        r = np.abs(z[:, features] - thresholds)  # (B, T, N): every decision
        gaps = np.abs(r[..., :, None] - r[..., None, :])[..., ~np.eye(r.shape[-1], dtype=bool)]
        if r.min() > 1e-3 and (gaps.size == 0 or gaps.min() > 1e-3):
            return z, features, thresholds, weights


@pytest.mark.parametrize(("depth", "ferns"), SETTINGS)
def test_traversals_equal_naive_walk(depth: int, ferns: bool) -> None:
    rng = np.random.default_rng(depth)
    features, thresholds, _ = init_forest(rng, 7, depth, 4, 1, ferns)
    z = rng.normal(0.0, 2.0, size=(30, 4))
    # half-integer grids in the second half: zero margins (go left) and tied |r| (shallowest wins)
    z[15:] = rng.integers(-4, 5, size=(15, 4)) / 2.0
    thresholds[3:] = rng.integers(-4, 5, size=thresholds[3:].shape) / 2.0
    leaf, margin, node = hinge_traverse(z, features, thresholds, depth, ferns)
    leaf_t, margin_t, node_t = hinge_traverse_t(
        torch.from_numpy(z), torch.from_numpy(features), torch.from_numpy(thresholds), depth, ferns
    )
    for b in range(z.shape[0]):
        one = hinge_traverse_one(z[b], features, thresholds, depth, ferns)
        for m in range(features.shape[0]):
            expected = naive_traversal(z[b], features[m], thresholds[m], depth, ferns)
            for got in (
                (leaf[b, m], margin[b, m], node[b, m]),
                (leaf_t[b, m].item(), margin_t[b, m].item(), node_t[b, m].item()),
                (one[0][m], one[1][m], one[2][m]),
            ):
                assert (int(got[0]), float(got[1]), int(got[2])) == expected


@pytest.mark.parametrize(("depth", "ferns"), SETTINGS)
def test_forward_equals_eq10_over_all_leaves(depth: int, ferns: bool) -> None:
    z, f, t, w = problem(depth, depth, ferns)
    args = (torch.from_numpy(z), torch.from_numpy(t), torch.from_numpy(w))
    fast = hinge_forest(*args, torch.from_numpy(f), depth, ferns, reduction="none")
    torch.testing.assert_close(fast, eq10_forest(*args, f, depth, ferns), rtol=0, atol=1e-12)
    torch.testing.assert_close(
        hinge_forest(*args, torch.from_numpy(f), depth, ferns, "sum"), fast.sum(1)
    )
    torch.testing.assert_close(
        hinge_forest(*args, torch.from_numpy(f), depth, ferns, "mean"), fast.mean(1)
    )


@pytest.mark.parametrize(("depth", "ferns"), SETTINGS)
def test_gradients_equal_autograd_of_eq10_and_numpy(depth: int, ferns: bool) -> None:
    z, f, t, w = problem(100 + depth, depth, ferns)
    upstream = torch.from_numpy(np.random.default_rng(depth).normal(size=(z.shape[0], 4, 3)))
    grads = []
    for fn in ("fast", "slow"):
        leaves = [torch.from_numpy(a).requires_grad_() for a in (z, t, w)]
        if fn == "fast":
            out = hinge_forest(*leaves, torch.from_numpy(f), depth, ferns, reduction="none")
        else:
            out = eq10_forest(*leaves, f, depth, ferns)
        (out * upstream).sum().backward()
        grads.append([a.grad for a in leaves])
    for fast, slow in zip(*grads, strict=True):
        torch.testing.assert_close(fast, slow, rtol=0, atol=1e-12)
    # the numpy gradients (the bandit path) are the same batch gradients
    leaf, margin, node = hinge_traverse(z, f, t, depth, ferns)
    grad_w, grad_t, grad_z = hinge_gradients(w, f, leaf, margin, node, upstream.numpy(), z.shape[1])
    np.testing.assert_allclose(grad_w, grads[0][2].numpy(), atol=1e-12)
    np.testing.assert_allclose(grad_t, grads[0][1].numpy(), atol=1e-12)
    np.testing.assert_allclose(grad_z, grads[0][0].numpy(), atol=1e-12)


@pytest.mark.parametrize(("depth", "ferns"), SETTINGS)
def test_gradcheck_float64_away_from_ties(depth: int, ferns: bool) -> None:
    z, f, t, w = problem(200 + depth, depth, ferns, n_examples=3, n_trees=3, n_out=2)
    features = torch.from_numpy(f)
    inputs = tuple(torch.from_numpy(a).requires_grad_() for a in (z, t, w))
    assert torch.autograd.gradcheck(
        lambda a, b, c: hinge_forest(a, b, c, features, depth, ferns, "none"),
        inputs,
        eps=1e-6,
        atol=1e-7,
    )


@pytest.mark.parametrize("ferns", [False, True])
def test_exactly_one_leaf_and_one_threshold_per_tree_get_gradient(ferns: bool) -> None:
    depth, n_trees = 4, 6
    z, f, t, w = problem(7, depth, ferns, n_examples=5, n_trees=n_trees)
    leaf, margin, node = hinge_traverse(z, f, t, depth, ferns)
    for b in range(z.shape[0]):
        params = [torch.from_numpy(a).requires_grad_() for a in (t, w)]
        out = hinge_forest(
            torch.from_numpy(z[b : b + 1]), *params, torch.from_numpy(f), depth, ferns
        )
        out.sum().backward()
        grad_t, grad_w = (p.grad.numpy() for p in params)  # type: ignore[union-attr]
        rows = np.abs(grad_w).sum(axis=2) > 0  # (T, L): leaves with a weight gradient
        assert (rows.sum(axis=1) == 1).all()
        assert (np.flatnonzero(rows) % (1 << depth) == leaf[b]).all()
        np.testing.assert_allclose(grad_w[np.arange(n_trees), leaf[b], 0], np.abs(margin[b]))
        assert ((grad_t != 0).sum(axis=1) == 1).all()
        assert (np.argmax(grad_t != 0, axis=1) == node[b]).all()


@pytest.mark.parametrize("depth", [1, 2, 4])
def test_fern_is_a_tree_with_one_decision_per_level(depth: int) -> None:
    rng = np.random.default_rng(depth)
    f, t, _ = init_forest(rng, 5, depth, 6, 2, ferns=True)
    level_of_node = np.floor(np.log2(np.arange((1 << depth) - 1) + 1)).astype(np.int64)
    tree_f, tree_t = f[:, level_of_node], t[:, level_of_node]  # (T, 2**D - 1)
    z = rng.normal(0.0, 2.0, size=(40, 6))
    fern = hinge_traverse(z, f, t, depth, ferns=True)
    tree = hinge_traverse(z, tree_f, tree_t, depth, ferns=False)
    np.testing.assert_array_equal(fern[0], tree[0])
    np.testing.assert_array_equal(fern[1], tree[1])
    np.testing.assert_array_equal(fern[2], level_of_node[tree[2]])
    assert f.shape == t.shape == (5, depth)


def test_fern_threshold_moves_every_node_of_its_level() -> None:
    f = np.array([[0, 1]])
    t = np.array([[0.0, 0.0]])
    z = np.array([[-1.0, 0.5], [1.0, 0.5]])  # one example down each subtree
    assert hinge_traverse(z, f, t, 2, ferns=True)[0].tolist() == [[1], [3]]
    t[0, 1] = 1.0  # both level-1 nodes now send these examples left
    assert hinge_traverse(z, f, t, 2, ferns=True)[0].tolist() == [[0], [2]]


def test_algorithm1_initialisation() -> None:
    f, t, w = init_forest(np.random.default_rng(0), 200, 6, 9, 3)
    assert f.shape == t.shape == (200, 63) and w.shape == (200, 64, 3)
    assert f.min() == 0 and f.max() == 8
    assert -3.0 <= t.min() < -2.9 and 2.9 < t.max() <= 3.0
    assert abs(t.std() - 6.0 / np.sqrt(12.0)) < 0.02
    assert abs(w.mean()) < 5e-4 and abs(w.std() - 0.01) < 5e-4
