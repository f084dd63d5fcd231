"""The frozen (collapsed, numpy) tree routes exactly like the layered training form."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode

from banditree.models.dgt.frozen import FrozenTree
from banditree.models.dgt.tree import DGTree
from banditree.models.dgt.tree_ops import leaf_from_activations


class TorchCallCounter(TorchFunctionMode):
    """Counts every torch function called while active."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[str] = []

    def __torch_function__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        self.calls.append(getattr(func, "__name__", str(func)))
        return func(*args, **(kwargs or {}))


def random_tree(
    height: int, hidden: tuple[int, ...] | str, seed: int, dtype: torch.dtype
) -> DGTree:
    torch.manual_seed(seed)
    tree = DGTree(7, 3, height, hidden).to(dtype)
    with torch.no_grad():  # spread activations so both children of every node are used
        tree.layers[0].mul_(3.0)
    return tree


@pytest.mark.parametrize("dtype", [torch.float64, torch.float32])
@pytest.mark.parametrize(
    "height,hidden",
    [(1, ()), (3, ()), (6, ()), (3, (11, 9)), (5, (40, 33)), (2, "table12")],
)
def test_collapsed_equals_layered(
    height: int, hidden: tuple[int, ...] | str, dtype: torch.dtype
) -> None:
    tree = random_tree(height, hidden, seed=height, dtype=dtype)
    assert len(tree.layers) == (1 if hidden == () else 3)
    x = torch.randn(500, 7, generator=torch.Generator().manual_seed(1), dtype=dtype)
    layered = tree.leaves(x).numpy()
    walked = leaf_from_activations(tree.activations(x).detach().double().numpy(), height)
    frozen = tree.freeze()
    x_np = x.double().numpy()
    np.testing.assert_array_equal(frozen.leaves(x_np), layered)
    np.testing.assert_array_equal(walked, layered)
    assert len(np.unique(layered)) > 1
    single = np.array([frozen.leaf(row) for row in x_np])
    np.testing.assert_array_equal(single, layered)
    with torch.no_grad():
        out = tree(x).double().numpy()
    np.testing.assert_allclose(frozen.predict(x_np), out, rtol=1e-6)


def test_frozen_form_is_independent_numpy() -> None:
    tree = random_tree(4, (10, 8), seed=0, dtype=torch.float32)
    frozen = tree.freeze()
    assert isinstance(frozen.weights, np.ndarray) and frozen.weights.dtype == np.float64
    assert isinstance(frozen.theta, np.ndarray) and frozen.theta.dtype == np.float64
    assert frozen.weights.shape == (15, 8)
    before = frozen.weights.copy()
    with torch.no_grad():
        for w in tree.layers:
            w.add_(1.0)
    np.testing.assert_array_equal(frozen.weights, before)


def test_frozen_prediction_never_calls_torch() -> None:
    frozen = random_tree(6, (), seed=3, dtype=torch.float32).freeze()
    x = np.random.default_rng(0).normal(size=(64, 7))
    with TorchCallCounter() as counter:
        leaf, row = frozen.predict_one(x[0])
        batch = frozen.predict(x)
        leaves = frozen.leaves(x)
    assert counter.calls == []
    assert isinstance(leaf, int) and isinstance(row, np.ndarray)
    assert isinstance(batch, np.ndarray) and isinstance(leaves, np.ndarray)
    np.testing.assert_array_equal(batch, frozen.theta[leaves])
    # the counter itself does see torch calls
    with TorchCallCounter() as counter:
        torch.zeros(1)
    assert counter.calls


@pytest.mark.parametrize("hidden", [(), (9, 6)])
def test_json_round_trip_gives_same_predictions(hidden: tuple[int, ...]) -> None:
    frozen = random_tree(5, hidden, seed=11, dtype=torch.float32).freeze()
    text = frozen.dumps()
    back = FrozenTree.from_json(text)
    np.testing.assert_array_equal(back.weights, frozen.weights)
    np.testing.assert_array_equal(back.theta, frozen.theta)
    x = np.random.default_rng(2).normal(size=(300, 7))
    np.testing.assert_array_equal(back.leaves(x), frozen.leaves(x))
    np.testing.assert_array_equal(back.predict(x), frozen.predict(x))
    doc = frozen.to_json()
    assert len(doc["nodes"]) == 31 and len(doc["leaves"]) == 32
    assert doc["nodes"][0]["left"] == 1 and doc["nodes"][0]["right"] == 2
    restored = DGTree.from_frozen(back).double()
    np.testing.assert_array_equal(restored.leaves(torch.from_numpy(x)).numpy(), frozen.leaves(x))


def test_json_with_wrong_format_is_refused() -> None:
    doc = random_tree(2, (), seed=0, dtype=torch.float32).freeze().to_json()
    doc["format"] = "something/else"
    with pytest.raises(ValueError, match="format"):
        FrozenTree.from_json(doc)


def test_json_round_trip_keeps_the_linear_term() -> None:
    rng = np.random.default_rng(4)
    base = random_tree(3, (), seed=1, dtype=torch.float64).freeze()
    linear = rng.normal(size=(base.n_outputs, base.n_features))
    frozen = FrozenTree(weights=base.weights, theta=base.theta, linear=linear)
    x = rng.normal(size=(20, base.n_features))
    expected = base.predict(x) + x @ linear.T
    np.testing.assert_allclose(frozen.predict(x), expected, atol=1e-12)
    for row, want in zip(x, expected, strict=True):
        leaf, out = frozen.predict_one(row)
        assert leaf == base.leaf(row)
        np.testing.assert_allclose(out, want, atol=1e-12)
    back = FrozenTree.from_json(frozen.dumps())
    np.testing.assert_array_equal(back.predict(x), frozen.predict(x))
    assert FrozenTree.from_json(base.dumps()).linear is None
    with pytest.raises(ValueError, match="linear"):
        FrozenTree(weights=base.weights, theta=base.theta, linear=linear.T)


@pytest.mark.parametrize("height", [1, 3, 6, 7, 8])
@pytest.mark.parametrize("rows", [1, 5, 16, 17, 64])
def test_rows_of_a_batch_are_the_rows_alone(height: int, rows: int) -> None:
    """A batch's leaves and outputs are each row's alone, the same numbers (what lets a
    service decide one-context requests together): small batches route by one product,
    larger ones level by level, and the linear term is summed alike either way."""
    rng = np.random.default_rng(height * 100 + rows)
    n_int, d, k = (1 << height) - 1, 9, 4
    tree = FrozenTree(
        weights=rng.normal(size=(n_int, d + 1)),
        theta=rng.normal(size=(1 << height, k)),
        linear=rng.normal(size=(k, d)),
    )
    x = rng.normal(size=(rows, d))
    leaves = tree.leaves(x)
    outputs = tree.outputs(x, leaves)
    alone = [tree.predict_one(row) for row in x]
    assert leaves.tolist() == [leaf for leaf, _ in alone]
    assert outputs.tolist() == [row.tolist() for _, row in alone]  # exact, not close
    assert len(set(leaves.tolist())) > 1 or rows == 1
