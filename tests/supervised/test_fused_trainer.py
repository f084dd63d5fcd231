"""The fused training loop applies the same updates as autograd + torch.optim."""

from __future__ import annotations

import math

import pytest
import torch
from torch.nn import functional

from banditree.models.dgt.batch_grad import PathAlgebra, tree_loss_and_grads
from banditree.models.dgt.tree import DGTree
from banditree.supervised import TrainingConfig
from banditree.supervised.autograd_trainer import make_scheduler, train_tree_autograd
from banditree.supervised.trainer import cosine_learning_rate, resolve_device, train_tree


def _data(n: int, task: str) -> tuple[torch.Tensor, torch.Tensor]:
    gen = torch.Generator().manual_seed(1)
    x = torch.randn(n, 6, generator=gen)
    if task == "cross_entropy":
        return x, (x[:, 0] > 0).long() + (x[:, 1] > 0.5).long()
    return x, torch.rand(n, 1, generator=gen)


@pytest.mark.parametrize("loss", ["cross_entropy", "squared"])
@pytest.mark.parametrize("hidden", [(), (5, 7)])
@pytest.mark.parametrize("dense", [True, False])
def test_gradients_equal_autograd(loss: str, hidden: tuple[int, ...], dense: bool) -> None:
    x, y = _data(64, loss)
    torch.manual_seed(0)
    tree = DGTree(6, 3 if loss == "cross_entropy" else 1, 3, hidden)
    out = tree(x)
    fn = functional.cross_entropy if loss == "cross_entropy" else functional.mse_loss
    reference = fn(out, y)
    reference.backward()
    layers = [w.detach() for w in tree.layers]
    value, grads, grad_theta = tree_loss_and_grads(
        layers, tree.theta.detach(), DGTree.augment(x), y, loss, PathAlgebra(3, dense=dense)
    )
    assert float(value) == pytest.approx(float(reference.detach()), rel=1e-6)
    for w, g in zip(tree.layers, grads, strict=True):
        assert w.grad is not None and g.abs().max() > 0
        torch.testing.assert_close(g, w.grad, rtol=1e-5, atol=1e-7)
    torch.testing.assert_close(grad_theta, tree.theta.grad, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize(
    ("loss", "momentum", "reg", "kind", "hidden"),
    [
        ("cross_entropy", 0.0, 0.0, "l2", ()),
        ("cross_entropy", 0.8, 1e-3, "l1", (7, 9)),
        ("squared", 0.3, 1e-3, "l2", ()),
    ],
)
def test_training_run_matches_autograd_loop(
    loss: str, momentum: float, reg: float, kind: str, hidden: tuple[int, ...]
) -> None:
    # six mini-batch steps: over long runs float32 rounding near a = 0 may flip one
    # route and the two hard-tree trajectories part, so the comparison is kept short
    x, y = _data(384, loss)
    cfg = TrainingConfig(
        height=4,
        epochs=2,
        progress=False,
        momentum=momentum,
        reg_strength=reg,
        regularization=kind,  # type: ignore[arg-type]
        hidden=hidden,
        restarts=1,
    )
    k = 3 if loss == "cross_entropy" else 1
    torch.manual_seed(0)
    fused = DGTree(6, k, 4, hidden)
    reference = DGTree(6, k, 4, hidden)
    reference.load_state_dict(fused.state_dict())
    start = [p.detach().clone() for p in fused.parameters()]
    fn = functional.cross_entropy if loss == "cross_entropy" else functional.mse_loss
    h1 = train_tree(fused, x, y, loss, cfg, torch.Generator().manual_seed(0))  # type: ignore[arg-type]
    h2 = train_tree_autograd(reference, x, y, fn, cfg, torch.Generator().manual_seed(0))
    assert h1 == pytest.approx(h2, rel=1e-5)
    for a, b, s in zip(fused.parameters(), reference.parameters(), start, strict=True):
        assert not torch.equal(a, s)  # training moved it
        torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-5)


def test_level_form_is_used_above_height_8_and_agrees_with_the_dense_form() -> None:
    assert PathAlgebra(8).matrix is not None and PathAlgebra(9).matrix is None
    gen = torch.Generator().manual_seed(0)
    sign = torch.where(torch.randn(16, 511, generator=gen) > 0, 1.0, -1.0)
    dq = torch.randn(16, 512, generator=gen)
    dense, levels = PathAlgebra(9, dense=True), PathAlgebra(9)
    torch.testing.assert_close(levels.scores(sign), dense.scores(sign), rtol=0, atol=0)
    torch.testing.assert_close(levels.adjoint(dq), dense.adjoint(dq), rtol=1e-5, atol=1e-5)


def test_closed_form_schedule_equals_torch_scheduler() -> None:
    cfg = TrainingConfig(restarts=3, learning_rate=1e-2, min_learning_rate=1e-4)
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.RMSprop([param], lr=cfg.learning_rate)
    scheduler = make_scheduler(optimizer, 103, cfg)
    assert scheduler is not None
    for step in range(103):
        assert cosine_learning_rate(step, 103, cfg) == pytest.approx(
            optimizer.param_groups[0]["lr"], rel=1e-12
        )
        optimizer.step()
        scheduler.step()
    assert cosine_learning_rate(5, 103, TrainingConfig(restarts=None)) == 1e-2
    assert math.isclose(cosine_learning_rate(0, 103, cfg), 1e-2)


def test_cuda_is_refused_clearly_without_a_gpu() -> None:
    if torch.cuda.is_available():
        assert resolve_device("cuda").type == "cuda"
    else:
        with pytest.raises(ValueError, match="torch sees no GPU"):
            resolve_device("cuda")
    with pytest.raises(ValueError, match="device must be"):
        resolve_device("tpu")
    with pytest.raises(ValueError, match="device must be"):
        TrainingConfig(device="tpu")
