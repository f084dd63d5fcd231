"""Path algebra of the hard tree: Proposition 1, routing, Algorithm 2 gradients."""

from __future__ import annotations

import numpy as np
import pytest

from banditree.models.dgt.spec import DGTSpec, dgt_gradients
from banditree.models.dgt.tree_ops import leaf_from_activations, path_scores, quantised_sign


def naive_walk(a: np.ndarray, height: int) -> int:
    node = 0
    for _ in range(height):
        node = 2 * node + 2 if a[node] > 0 else 2 * node + 1
    return node - (2**height - 1)


def path_matrix(height: int) -> np.ndarray:
    """S(i, l) laid out as a (n_leaves, n_internal) matrix, built by walking up from each leaf."""
    n_int = 2**height - 1
    s = np.zeros((2**height, n_int))
    for leaf in range(2**height):
        node = leaf + n_int
        while node:
            parent = (node - 1) // 2
            s[leaf, parent] = 1.0 if node == 2 * parent + 2 else -1.0
            node = parent
    return s


@pytest.mark.parametrize("height", [1, 2, 3, 5, 8])
def test_sum_form_equals_product_form_and_naive_walk(height: int) -> None:
    rng = np.random.default_rng(height)
    a = rng.normal(size=(200, 2**height - 1))
    step = (a > 0).astype(float)  # sigma_step as used for routing (ties go left)
    s = path_matrix(height)
    # product form (eq. 2): prod_i sigma(a S)
    signed = np.where(
        s[None] > 0, step[:, None, :], np.where(s[None] < 0, 1 - step[:, None, :], 1.0)
    )
    product = signed.prod(axis=-1)
    # sum form (eq. 4): sigma(sum_i sigma(a S) - h) with sigma = step
    terms = np.where(
        s[None] != 0, np.where(s[None] > 0, step[:, None, :], 1 - step[:, None, :]), 0.0
    )
    summed = (terms.sum(axis=-1) - height >= 0).astype(float)
    np.testing.assert_array_equal(product, summed)
    q = path_scores(quantised_sign(a), height)
    np.testing.assert_array_equal(q, quantised_sign(a) @ s.T)
    reached = np.array([naive_walk(row, height) for row in a])
    np.testing.assert_array_equal(np.argmax(product, axis=1), reached)
    np.testing.assert_array_equal(leaf_from_activations(a, height), reached)
    assert (q.max(axis=1) == height).all() and ((q == height).sum(axis=1) == 1).all()


def slow_gradients(w: np.ndarray, theta: np.ndarray, x: np.ndarray, g: np.ndarray, height: int):
    """Algorithm 2 written node by node and leaf by leaf, straight from the paper."""
    x1 = np.append(x, 1.0)
    a = w @ x1
    s = path_matrix(height)
    n_leaves, n_int = s.shape
    q = np.array(
        [
            sum((1 if a[i] > 0 else -1) * s[leaf, i] for i in range(n_int) if s[leaf, i])
            for leaf in range(n_leaves)
        ]
    )
    e = np.exp(q)
    z = e.sum()
    grad_w = np.zeros_like(w)
    for k in range(theta.shape[1]):
        v = (e * theta[:, k]).sum()
        for leaf in range(n_leaves):
            dq = np.zeros_like(w)
            for i in range(n_int):
                if s[leaf, i] and abs(a[i]) <= 1:
                    dq[i] += s[leaf, i] * x1
            grad_w += g[k] * (theta[leaf, k] - v / z) * e[leaf] / z * dq
    leaf = int(np.argmax(q))
    grad_theta = np.zeros_like(theta)
    grad_theta[leaf] = g
    return grad_w, grad_theta


@pytest.mark.parametrize("height,k", [(1, 1), (3, 2), (4, 5)])
def test_algorithm2_matches_slow_implementation(height: int, k: int) -> None:
    rng = np.random.default_rng(7 + height)
    spec = DGTSpec(4, k, height)
    params = spec.init_params(rng)
    params["W0"] *= 4.0  # some nodes outside the straight-through window
    params["theta"] = rng.normal(size=params["theta"].shape)
    for _ in range(5):
        x = rng.normal(size=4)
        g = rng.normal(size=k)
        fast = dgt_gradients([params["W0"]], params["theta"], x, lambda out, g=g: g, height)
        gw, gt = slow_gradients(params["W0"], params["theta"], x, g, height)
        np.testing.assert_allclose(fast["W0"], gw, atol=1e-6, rtol=0)
        np.testing.assert_allclose(fast["theta"], gt, atol=1e-6, rtol=0)
