"""Algorithm 3 through autograd and ``torch.optim``: the reference the fused loop is checked against.

:func:`banditree.supervised.trainer.train_tree` computes the same updates without a
graph (several times faster); this loop stays as the readable definition, for the
equivalence tests and the speed benchmark's baseline.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import torch
from torch import Tensor
from tqdm.auto import tqdm

from banditree.models.dgt.tree import DGTree
from banditree.supervised.config import TrainingConfig

LossFunction = Callable[[Tensor, Tensor], Tensor]


def weight_penalty(tree: DGTree, config: TrainingConfig) -> Tensor:
    """``lambda * sum_m ||W^(m)||_1`` (or squared Frobenius norm) over the node layers."""
    if config.regularization == "l1":
        total = sum(w.abs().sum() for w in tree.layers)
    else:
        total = sum(w.square().sum() for w in tree.layers)
    return config.reg_strength * torch.as_tensor(total)


def make_scheduler(
    optimizer: torch.optim.Optimizer, steps_total: int, config: TrainingConfig
) -> torch.optim.lr_scheduler.LRScheduler | None:
    """Cosine annealing with ``restarts`` warm restarts over ``steps_total`` mini-batch steps."""
    if config.restarts is None:
        return None
    cycle_steps = max(1, math.ceil(steps_total / (config.restarts + 1)))
    return torch.optim.lr_scheduler.CosineAnnealingWarmRestarts(
        optimizer, T_0=cycle_steps, eta_min=config.min_learning_rate
    )


def train_tree_autograd(
    tree: DGTree,
    inputs: Tensor,
    targets: Tensor,
    loss_fn: LossFunction,
    config: TrainingConfig,
    generator: torch.Generator,
) -> list[float]:
    """Fit ``tree`` in place on prepared (standardised / scaled) data.

    Parameters
    ----------
    tree
        The torch training form; its parameters are updated in place.
    inputs
        ``(n, d)`` standardised inputs.
    targets
        ``(n,)`` class indices or ``(n, 1)`` scaled regression targets.
    loss_fn
        Mean loss of a mini-batch ``(outputs (B, K), targets) -> scalar``.
    config
        Optimiser, schedule and regularisation settings.
    generator
        Source of the mini-batch order.

    Returns
    -------
    list of float
        Mean training loss (without the penalty) of each epoch.
    """
    n = inputs.shape[0]
    steps_per_epoch = math.ceil(n / config.batch_size)
    optimizer = torch.optim.RMSprop(
        tree.parameters(),
        lr=config.learning_rate,
        momentum=config.momentum,
        eps=config.rmsprop_eps,
    )
    scheduler = make_scheduler(optimizer, steps_per_epoch * config.epochs, config)
    epoch_losses: list[float] = []
    bar = tqdm(range(config.epochs), disable=not config.progress, desc="DGT", unit="epoch")
    tree.train()
    for _ in bar:
        order = torch.randperm(n, generator=generator)
        total = 0.0
        for start in range(0, n, config.batch_size):
            batch = order[start : start + config.batch_size]
            loss = loss_fn(tree(inputs[batch]), targets[batch])
            objective = loss + weight_penalty(tree, config) if config.reg_strength else loss
            optimizer.zero_grad(set_to_none=True)
            objective.backward()
            if config.grad_clip_norm > 0:
                torch.nn.utils.clip_grad_norm_(tree.parameters(), config.grad_clip_norm)
            optimizer.step()
            if scheduler is not None:
                scheduler.step()
            total += float(loss.detach()) * batch.shape[0]
        epoch_losses.append(total / n)
        bar.set_postfix(loss=f"{epoch_losses[-1]:.4f}")
        if not math.isfinite(epoch_losses[-1]):
            raise FloatingPointError(
                f"training loss became {epoch_losses[-1]} after {len(epoch_losses)} epochs"
            )
    tree.eval()
    return epoch_losses
