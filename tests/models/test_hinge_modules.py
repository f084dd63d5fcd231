"""Torch modules: online standardisation, hinge forest layer, pooled forest training."""

from __future__ import annotations

import pytest
import torch

from banditree.models.hinge.modules import HingeForest, OnlineStandardize, PooledHingeForest


def test_online_standardize_same_computation_in_training_and_evaluation() -> None:
    torch.manual_seed(0)
    layer = OnlineStandardize(3, momentum=0.5)
    first = torch.randn(50, 3) * torch.tensor([1.0, 5.0, 0.1]) + 2.0
    out = layer(first)  # the first batch sets the statistics
    torch.testing.assert_close(layer.running_mean, first.mean(0))
    torch.testing.assert_close(out.std(0), torch.ones(3), atol=1e-3, rtol=0)
    second = torch.randn(50, 3)
    layer(second)
    torch.testing.assert_close(layer.running_mean, 0.5 * first.mean(0) + 0.5 * second.mean(0))
    batch = torch.randn(8, 3, requires_grad=True)
    train_out = layer(batch)  # updates the statistics, then normalises with the running values
    mean, var = layer.running_mean.clone(), layer.running_var.clone()
    expected = (batch - mean) / torch.sqrt(var + layer.eps)
    torch.testing.assert_close(train_out, expected)
    layer.eval()
    eval_out = layer(batch)
    torch.testing.assert_close(eval_out, expected)
    torch.testing.assert_close(layer.running_mean, mean)  # evaluation does not update
    eval_out.sum().backward()
    # the statistics are constants for the backward pass
    torch.testing.assert_close(batch.grad, (1.0 / torch.sqrt(var + layer.eps)).expand(8, 3))
    with pytest.raises(ValueError, match="momentum"):
        OnlineStandardize(3, momentum=0.0)


@pytest.mark.parametrize("ferns", [False, True])
def test_hinge_forest_shapes_and_reductions(ferns: bool) -> None:
    torch.manual_seed(0)
    forest = HingeForest(6, n_trees=5, depth=4, n_outputs=2, ferns=ferns, reduction="none")
    n_dec = 4 if ferns else 15
    assert forest.thresholds.shape == forest.features.shape == (5, n_dec)
    assert forest.weights.shape == (5, 16, 2)
    assert "features" in forest.state_dict() and "features" not in dict(forest.named_parameters())
    assert 0 <= int(forest.features.min()) and int(forest.features.max()) <= 5
    z = torch.randn(7, 6)
    per_tree = forest(z)
    assert per_tree.shape == (7, 10)
    forest.reduction = "sum"
    torch.testing.assert_close(forest(z), per_tree.view(7, 5, 2).sum(1))
    leaf, margin, node = forest.traverse(z)
    assert leaf.shape == margin.shape == node.shape == (7, 5)
    assert "ferns=" + str(ferns) in repr(forest)
    with pytest.raises(ValueError, match="reduction"):
        HingeForest(6, 5, 4, reduction="max")
    with pytest.raises(ValueError, match="depth"):
        HingeForest(6, 5, 13)


def test_pooled_hinge_forest_learns_a_nonlinear_problem() -> None:
    torch.manual_seed(0)
    x = torch.rand(600, 2) * 2 - 1
    y = ((x[:, 0] * x[:, 1]) > 0).long()  # XOR of signs: no linear separator
    model = torch.nn.Sequential(
        PooledHingeForest(2, n_pool=8, n_trees=20, depth=3, reduction="none"),
        torch.nn.Linear(20, 2),
    )
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    for _ in range(150):
        perm = torch.randperm(600)
        for i in range(0, 600, 60):
            b = perm[i : i + 60]
            opt.zero_grad()
            torch.nn.functional.cross_entropy(model(x[b]), y[b]).backward()
            opt.step()
        if (model(x).argmax(1) == y).float().mean() > 0.95:
            break
    model.eval()
    assert (model(x).argmax(1) == y).float().mean() > 0.95
