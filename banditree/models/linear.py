"""A linear scorer: the linear epsilon-greedy baseline's model."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.models.spec import BatchOutput, ModelOutput, ModelSpec, Params, UpstreamFn


class LinearSpec(ModelSpec):
    """``output = W [x; 1]`` with ``W`` ``(K, d + 1)``, zero-initialised."""

    kind = "linear"
    regularised = ("W",)

    def init_params(self, rng: np.random.Generator) -> Params:
        w = np.zeros((self.n_outputs, self.n_features + 1))
        w[:, -1] = self.output_bias
        return {"W": w}

    def freeze(self, params: Mapping[str, FloatArray]) -> tuple[FloatArray, FloatArray]:
        w = params["W"]
        return np.ascontiguousarray(w[:, :-1]), w[:, -1].copy()

    def forward(self, frozen: tuple[FloatArray, FloatArray], x: FloatArray) -> ModelOutput:
        w, b = frozen
        return ModelOutput(output=w @ x + b)

    def forward_batch(self, frozen: tuple[FloatArray, FloatArray], x: FloatArray) -> FloatArray:
        w, b = frozen
        out: FloatArray = x @ w.T + b
        return out

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
