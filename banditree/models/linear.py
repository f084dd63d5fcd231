"""A linear scorer: the linear epsilon-greedy baseline's model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.models.spec import BatchOutput, ModelOutput, ModelSpec, Params, UpstreamFn


class LinearSpec(ModelSpec):
    """``output = W [x; 1]`` with ``W`` ``(K, d + 1)``, zero-initialised.

    ``output_range`` (``(low, high)``, or None: unbounded) holds the output within it,
    as a tree's output is held within its leaf values: with one-point feedback a linear
    output otherwise drifts far outside the targets' range (each step's direction is
    mostly noise, and the noise grows with the loss), and the loss with it.  Gradients
    are taken as if unheld, so a held output is still pulled back into the range.
    """

    kind = "linear"
    regularised = ("W",)

    def __init__(
        self, n_features: int, n_outputs: int, *, output_range: tuple[float, float] | None = None
    ) -> None:
        super().__init__(n_features, n_outputs)
        if output_range is not None and not output_range[0] < output_range[1]:
            raise ValueError(f"output_range must be (low, high) with low < high: {output_range}")
        self.output_range = output_range

    def init_params(self, rng: np.random.Generator) -> Params:
        w = np.zeros((self.n_outputs, self.n_features + 1))
        w[:, -1] = self.output_bias
        return {"W": w}

    def freeze(self, params: Mapping[str, FloatArray]) -> tuple[FloatArray, FloatArray]:
        w = params["W"]
        return np.ascontiguousarray(w[:, :-1]), w[:, -1].copy()

    def forward(self, frozen: tuple[FloatArray, FloatArray], x: FloatArray) -> ModelOutput:
        w, b = frozen
        return ModelOutput(output=self._held(w @ x + b))

    def forward_batch(self, frozen: tuple[FloatArray, FloatArray], x: FloatArray) -> FloatArray:
        w, b = frozen
        return self._held(x @ w.T + b)

    def _held(self, out: FloatArray) -> FloatArray:
        if self.output_range is None:
            return out
        held: FloatArray = np.clip(out, *self.output_range)
        return held

    def forward_rows(self, frozen: tuple[FloatArray, FloatArray], x: FloatArray) -> BatchOutput:
        return BatchOutput(output=self.forward_batch(frozen, x))

    def gradients_batch(
        self,
        params: Mapping[str, FloatArray],
        x: FloatArray,
        upstreams: Sequence[UpstreamFn],
        rng: np.random.Generator,
    ) -> Params:
        x1 = np.concatenate((x, np.ones((x.shape[0], 1))), axis=1)
        out = x1 @ params["W"].T
        g = np.array([up(row) for up, row in zip(upstreams, out, strict=True)])
        return {"W": g.T @ x1}

    def export(self, frozen: tuple[FloatArray, FloatArray]) -> dict[str, Any]:
        w, b = frozen
        return {"kind": self.kind, "weights": w.tolist(), "bias": b.tolist()}
