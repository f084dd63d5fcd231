"""The TEL module: shapes, validation, dense twin, end-to-end training in nn.Sequential."""

from __future__ import annotations

import pytest
import torch
from torch import nn

from banditree.datasets import load
from banditree.models.tel.layer import TEL

F64 = torch.float64


pytestmark = pytest.mark.usefixtures("one_torch_thread")


def pendigits_tensors() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, int]:
    ds = load("pendigits")
    return (
        torch.tensor(ds.X_train, dtype=torch.float32),
        torch.tensor(ds.y_train),
        torch.tensor(ds.X_test, dtype=torch.float32),
        torch.tensor(ds.y_test),
        ds.n_classes,
    )


def train_epoch(model: nn.Module, x: torch.Tensor, y: torch.Tensor, lr: float) -> list[float]:
    opt = torch.optim.Adam(model.parameters(), lr=lr)
    perm = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    losses = []
    for start in range(0, len(y), 256):
        batch = perm[start : start + 256]
        loss = nn.functional.cross_entropy(model(x[batch]), y[batch])
        opt.zero_grad()
        loss.backward()
        opt.step()
        losses.append(float(loss.detach()))
    return losses


def accuracy(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    with torch.no_grad():
        return float((model(x).argmax(1) == y).float().mean())


def test_shapes_init_and_repr() -> None:
    layer = TEL(5, 3, n_trees=4, depth=3, gamma=0.5)
    assert layer.node_weights.shape == (4, 7, 5)
    assert layer.leaf_weights.shape == (4, 8, 3)
    for p in (layer.node_weights.detach(), layer.leaf_weights.detach()):
        assert float(p.abs().max()) <= 0.01 and float(p.std()) > 0.001
    assert "n_trees=4, depth=3, gamma=0.5" in repr(layer)
    x = torch.randn(9, 5)
    assert layer(x).shape == (9, 3)
    per_tree = TEL(5, 3, n_trees=4, depth=3, gamma=0.5, sum_outputs=False)
    per_tree.load_state_dict(layer.state_dict())
    torch.testing.assert_close(per_tree(x).sum(dim=1), layer(x))
    assert per_tree(x).shape == (9, 4, 3)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"depth": 0}, r"depth must be an integer in \[1, 12\]"),
        ({"depth": 13}, r"depth must be an integer in \[1, 12\]"),
        ({"n_trees": 0}, "n_trees must be an integer >= 1"),
        ({"gamma": 0.0}, "gamma must be a finite number > 0"),
        ({"in_features": 0}, "in_features must be an integer >= 1"),
    ],
)
def test_bad_configuration_names_the_field(kwargs: dict[str, float], message: str) -> None:
    args = {"in_features": 3, "out_features": 2, **kwargs}
    with pytest.raises(ValueError, match=message):
        TEL(**args)  # type: ignore[arg-type]


def test_bad_input_shape_names_the_width() -> None:
    with pytest.raises(ValueError, match=r"input must have shape \(batch, 3\)"):
        TEL(3, 2)(torch.randn(4, 5))


def test_dense_module_twin_agrees_including_gradients() -> None:
    torch.manual_seed(3)
    fast = TEL(6, 4, n_trees=3, depth=5, gamma=0.7, dtype=F64)
    with torch.no_grad():
        fast.node_weights.mul_(60.0)  # spread <w, x> across and beyond the fractional region
    dense = TEL(6, 4, n_trees=3, depth=5, gamma=0.7, conditional=False, dtype=F64)
    dense.load_state_dict(fast.state_dict())
    x = torch.randn(50, 6, dtype=F64)
    for layer in (fast, dense):
        layer(x).square().sum().backward()
    assert 1.0 < fast.mean_reachable_leaves < 32.0
    torch.testing.assert_close(fast.node_weights.grad, dense.node_weights.grad, rtol=0, atol=1e-10)
    torch.testing.assert_close(fast.leaf_weights.grad, dense.leaf_weights.grad, rtol=0, atol=1e-10)


def test_trains_end_to_end_inside_sequential() -> None:
    """BatchNorm -> Linear -> TEL learns pendigits; gradients reach the layers before TEL."""
    x, y, x_test, y_test, n_classes = pendigits_tensors()
    torch.manual_seed(0)
    linear = nn.Linear(x.shape[1], 12)
    model = nn.Sequential(
        nn.BatchNorm1d(x.shape[1]), linear, TEL(12, n_classes, n_trees=5, depth=4, gamma=1.0)
    )
    before = linear.weight.detach().clone()
    losses = train_epoch(model, x, y, lr=0.05)
    assert sum(losses[-5:]) / 5 < 0.5 * losses[0]
    assert float((linear.weight.detach() - before).abs().max()) > 1e-2
    assert accuracy(model, x_test, y_test) > 0.85


def test_small_gamma_routes_to_about_one_leaf_after_training() -> None:
    """Figure 2 of the paper: with small gamma the reachable leaves fall to about 1."""
    x, y, x_test, y_test, n_classes = pendigits_tensors()
    torch.manual_seed(0)
    layer = TEL(x.shape[1], n_classes, n_trees=1, depth=6, gamma=0.1)
    model = nn.Sequential(nn.BatchNorm1d(x.shape[1]), layer)
    model(x[:256])
    assert layer.mean_reachable_leaves > 32  # at initialisation nearly every leaf is reached
    train_epoch(model, x, y, lr=0.1)
    model.eval()
    with torch.no_grad():
        model(x_test)
    assert layer.mean_reachable_leaves < 1.1
    assert accuracy(model, x_test, y_test) > 0.5
