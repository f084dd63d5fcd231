"""Settings of supervised DGT training (Algorithm 3, paper Table 11), checked at construction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from banditree.models.dgt.tree_ops import check_height

Regularization = Literal["l1", "l2"]


def _check_range(name: str, value: float, low: float, high: float | None = None) -> None:
    bound = f"[{low}, {high}]" if high is not None else f">= {low}"
    if not (value >= low and (high is None or value <= high)):
        raise ValueError(f"{name} must be {bound}, got {value!r}")


@dataclass(frozen=True)
class TrainingConfig:
    """Hyperparameters of one supervised DGT fit; defaults are the paper's (Table 11).

    Parameters
    ----------
    height
        Tree height ``h`` in ``[1, 12]``.
    hidden
        Widths of the linear overparameterization (``L = len(hidden) + 1``), or
        ``"table12"`` for the paper's ``L = 3`` widths.
    epochs
        Passes over the training set (the paper uses 30-400 by dataset size).
    batch_size
        Mini-batch size (128).
    learning_rate
        RMSprop learning rate at the top of each cosine cycle (1e-2).
    min_learning_rate
        Learning rate at the bottom of each cosine cycle.
    momentum
        RMSprop momentum (paper grid ``{0, 0.3, 0.8}``).
    rmsprop_eps
        RMSprop denominator epsilon.
    grad_clip_norm
        Global gradient-norm clipping threshold (1e-2); 0 disables clipping.
    restarts
        Warm restarts of the cosine schedule (3 gives 4 equal cycles); ``None``
        keeps the learning rate constant.
    regularization, reg_strength
        ``"l1"`` or ``"l2"`` penalty on the node weights ``W^(1..L)`` and its weight
        ``lambda`` (0 disables it).
    seed
        Seed of initialisation and mini-batch order.
    progress
        Show a tqdm bar over epochs.
    device
        ``"cpu"``, or ``"cuda"`` when torch sees a GPU.
    """

    height: int = 6
    hidden: Sequence[int] | str = field(default=())
    epochs: int = 100
    batch_size: int = 128
    learning_rate: float = 1e-2
    min_learning_rate: float = 1e-4
    momentum: float = 0.0
    rmsprop_eps: float = 1e-8
    grad_clip_norm: float = 1e-2
    restarts: int | None = 3
    regularization: Regularization = "l2"
    reg_strength: float = 0.0
    seed: int = 0
    progress: bool = True
    device: str = "cpu"

    def __post_init__(self) -> None:
        check_height(self.height)
        if isinstance(self.hidden, str):
            if self.hidden != "table12":
                raise ValueError(
                    f"hidden must be 'table12' or a list of widths, got {self.hidden!r}"
                )
        else:
            widths = tuple(self.hidden)
            if any(not isinstance(w, int) or w < 1 for w in widths):
                raise ValueError(f"hidden widths must be integers >= 1, got {list(widths)}")
            object.__setattr__(self, "hidden", widths)
        if not isinstance(self.epochs, int) or self.epochs < 1:
            raise ValueError(f"epochs must be an integer >= 1, got {self.epochs!r}")
        if not isinstance(self.batch_size, int) or self.batch_size < 1:
            raise ValueError(f"batch_size must be an integer >= 1, got {self.batch_size!r}")
        _check_range("learning_rate", self.learning_rate, 1e-12, 10.0)
        _check_range("min_learning_rate", self.min_learning_rate, 0.0, self.learning_rate)
        _check_range("momentum", self.momentum, 0.0, 0.99)
        _check_range("rmsprop_eps", self.rmsprop_eps, 1e-12, 1.0)
        _check_range("grad_clip_norm", self.grad_clip_norm, 0.0)
        if self.restarts is not None and (not isinstance(self.restarts, int) or self.restarts < 0):
            raise ValueError(f"restarts must be None or an integer >= 0, got {self.restarts!r}")
        if self.regularization not in ("l1", "l2"):
            raise ValueError(f"regularization must be 'l1' or 'l2', got {self.regularization!r}")
        _check_range("reg_strength", self.reg_strength, 0.0, 1.0)
        if self.device not in ("cpu", "cuda"):
            raise ValueError(f"device must be 'cpu' or 'cuda', got {self.device!r}")
