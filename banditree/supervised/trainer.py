"""The mini-batch loop of Algorithm 3, fused: RMSprop, clipping, cosine restarts, L1/L2 on ``W``.

It applies the same updates as :func:`~banditree.supervised.autograd_trainer.train_tree_autograd`
(``torch.optim.RMSprop``, ``clip_grad_norm_``, ``CosineAnnealingWarmRestarts``), with
the gradients of :func:`~banditree.models.dgt.batch_grad.tree_loss_and_grads` and
the optimiser written with in-place ``torch._foreach`` ops: no autograd graph, no
per-step Python objects.  Each epoch gathers its shuffled rows once and slices them.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor
from tqdm.auto import tqdm

from banditree.models.dgt.batch_grad import PathAlgebra, TreeLoss, tree_loss_and_grads
from banditree.models.dgt.tree import DGTree
from banditree.supervised.autograd_trainer import make_scheduler, weight_penalty
from banditree.supervised.config import TrainingConfig

__all__ = ["cosine_learning_rate", "make_scheduler", "train_tree", "weight_penalty"]

#: RMSprop's smoothing constant (torch's default ``alpha``)
RMSPROP_ALPHA = 0.99

EpochCallback = Callable[[int, float], None]


def cosine_learning_rate(step: int, steps_total: int, config: TrainingConfig) -> float:
    """Learning rate of mini-batch ``step`` (0-based): cosine annealing with warm restarts.

    The closed form of ``CosineAnnealingWarmRestarts`` stepped once per mini-batch.
    """
    if config.restarts is None:
        return config.learning_rate
    cycle = max(1, math.ceil(steps_total / (config.restarts + 1)))
    t = step % cycle
    low, high = config.min_learning_rate, config.learning_rate
    return low + (high - low) * (1 + math.cos(math.pi * t / cycle)) / 2


def resolve_device(name: str) -> torch.device:
    """``cpu`` or ``cuda`` (refused with a clear message when torch sees no GPU)."""
    if name == "cpu":
        return torch.device("cpu")
    if name == "cuda":
        if not torch.cuda.is_available():
            raise ValueError(
                "device cuda was asked for but torch sees no GPU "
                f"(torch {torch.__version__}, CUDA build: {torch.version.cuda or 'no'})"
            )
        return torch.device("cuda")
    raise ValueError(f"device must be 'cpu' or 'cuda', got {name!r}")


def _penalise(grads: list[Tensor], layers: list[Tensor], config: TrainingConfig) -> None:
    if not config.reg_strength:
        return
    if config.regularization == "l1":
        torch._foreach_add_(grads, torch._foreach_sign(layers), alpha=config.reg_strength)
    else:
        torch._foreach_add_(grads, layers, alpha=2.0 * config.reg_strength)


def _clip(grads: list[Tensor], max_norm: float) -> None:
    total = torch.linalg.vector_norm(torch.stack(torch._foreach_norm(grads)))
    coef = torch.clamp(max_norm / (total + 1e-6), max=1.0)
    torch._foreach_mul_(grads, coef)


def train_tree(
    tree: DGTree,
    inputs: Tensor,
    targets: Tensor,
    loss: TreeLoss,
    config: TrainingConfig,
    generator: torch.Generator,
    device: str = "cpu",
    on_epoch: EpochCallback | None = None,
) -> list[float]:
    """Fit ``tree`` in place on prepared (standardised / scaled) data.

    Parameters
    ----------
    tree
        The torch training form; its parameters are overwritten with the trained ones.
    inputs
        ``(n, d)`` standardised inputs.
    targets
        ``(n,)`` class indices (``cross_entropy``) or ``(n, 1)`` scaled targets (``squared``).
    loss
        ``"cross_entropy"`` or ``"squared"``.
    config
        Optimiser, schedule and regularisation settings.
    generator
        Source of the mini-batch order (a CPU generator).
    device
        ``"cpu"`` or ``"cuda"``.
    on_epoch
        Called with ``(epoch, mean training loss)`` after each epoch.

    Returns
    -------
    list of float
        Mean training loss (without the penalty) of each epoch.
    """
    dev = resolve_device(device)
    n = inputs.shape[0]
    steps_total = math.ceil(n / config.batch_size) * config.epochs
    z0 = DGTree.augment(inputs.to(dev, torch.float32))
    targets = targets.to(dev)
    path = PathAlgebra(tree.height, dev)
    layers = [w.detach().to(dev, torch.float32).clone() for w in tree.layers]
    theta = tree.theta.detach().to(dev, torch.float32).clone()
    params = [*layers, theta]
    square_avg = [torch.zeros_like(p) for p in params]
    momentum_buf = [torch.zeros_like(p) for p in params] if config.momentum > 0 else []
    epoch_losses: list[float] = []
    bar = tqdm(range(config.epochs), disable=not config.progress, desc="DGT", unit="epoch")
    step = 0
    for epoch in bar:
        order = torch.randperm(n, generator=generator).to(dev)
        x_epoch, y_epoch = z0[order], targets[order]
        total = torch.zeros((), device=dev)
        for start in range(0, n, config.batch_size):
            stop = min(start + config.batch_size, n)
            value, grad_layers, grad_theta = tree_loss_and_grads(
                layers, theta, x_epoch[start:stop], y_epoch[start:stop], loss, path
            )
            grads = [*grad_layers, grad_theta]
            _penalise(grad_layers, layers, config)
            if config.grad_clip_norm > 0:
                _clip(grads, config.grad_clip_norm)
            lr = cosine_learning_rate(step, steps_total, config)
            torch._foreach_mul_(square_avg, RMSPROP_ALPHA)
            torch._foreach_addcmul_(square_avg, grads, grads, value=1 - RMSPROP_ALPHA)
            avg = torch._foreach_sqrt(square_avg)
            torch._foreach_add_(avg, config.rmsprop_eps)
            if momentum_buf:
                torch._foreach_mul_(momentum_buf, config.momentum)
                torch._foreach_addcdiv_(momentum_buf, grads, avg)
                torch._foreach_add_(params, momentum_buf, alpha=-lr)
            else:
                torch._foreach_addcdiv_(params, grads, avg, value=-lr)
            total += value * (stop - start)
            step += 1
        epoch_losses.append(float(total) / n)
        bar.set_postfix(loss=f"{epoch_losses[-1]:.4f}")
        if not math.isfinite(epoch_losses[-1]):
            raise FloatingPointError(
                f"training loss became {epoch_losses[-1]} after {len(epoch_losses)} epochs"
            )
        if on_epoch is not None:
            on_epoch(epoch, epoch_losses[-1])
    with torch.no_grad():
        for w, trained in zip(tree.layers, layers, strict=True):
            w.copy_(trained.to(w.device))
        tree.theta.copy_(theta.to(tree.theta.device))
    tree.eval()
    return epoch_losses
