"""Settings of supervised DGT training (Algorithm 3, paper Table 11), checked at construction."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from banditree.models.dgt.tree_ops import check_height

Regularization = Literal["l1", "l2"]


def _check_range(name: str, value: float, low: float, high: float | None = None) -> None:
    bound = f"[{low}, {high}]" if high is not None else f">= {low}"
    if not (value >= low and (high is None or value <= high)):
        raise ValueError(f"{name} must be {bound}, got {value!r}")


def _doc(description: str) -> dict[str, Any]:
    """A dataclass field's metadata: its description (``train``'s option help is made from it)."""
    return {"description": description}


@dataclass(frozen=True)
class TrainingConfig:
    """Hyperparameters of one supervised DGT fit; defaults are the paper's (Table 11).

    Each field's meaning is its ``description``; ``banditree train`` has one option per
    field (:func:`banditree.learners.config.options.dataclass_fields`).
    """

    height: int = field(default=6, metadata=_doc("tree height h in [1, 12]"))
    hidden: Sequence[int] | str = field(
        default=(),
        metadata=_doc(
            "widths of the linear overparameterization (L = len(hidden) + 1), or "
            "'table12' for the paper's L = 3 widths"
        ),
    )
    epochs: int = field(
        default=100,
        metadata=_doc("passes over the training set (train: clip(1e6 / rows, 30, 400) if unset)"),
    )
    batch_size: int = field(default=128, metadata=_doc("mini-batch size"))
    learning_rate: float = field(
        default=1e-2, metadata=_doc("RMSprop step at the top of each cosine cycle")
    )
    min_learning_rate: float = field(
        default=1e-4, metadata=_doc("RMSprop step at the bottom of each cosine cycle")
    )
    momentum: float = field(
        default=0.0, metadata=_doc("RMSprop momentum (the paper's grid: 0, 0.3, 0.8)")
    )
    rmsprop_eps: float = field(default=1e-8, metadata=_doc("RMSprop denominator epsilon"))
    grad_clip_norm: float = field(
        default=1e-2, metadata=_doc("global gradient-norm clipping threshold; 0 disables it")
    )
    restarts: int | None = field(
        default=3,
        metadata=_doc(
            "warm restarts of the cosine schedule (3 gives 4 equal cycles); null: a constant step"
        ),
    )
    regularization: Regularization = field(
        default="l2", metadata=_doc("penalty on the node weights W^(1..L): l1 or l2")
    )
    reg_strength: float = field(
        default=0.0, metadata=_doc("weight lambda of the penalty; 0 disables it")
    )
    seed: int = field(
        default=0, metadata=_doc("seeds the splits, initialisation and mini-batch order")
    )
    progress: bool = field(default=True, metadata=_doc("show progress bars"))
    device: str = field(default="cpu", metadata=_doc("cpu, or cuda when torch sees a GPU"))

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
