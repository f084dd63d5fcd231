"""DGT as a bandit model: numpy parameters and hand-derived gradients (Algorithm 2)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from banditree.models.dgt import effective_weights_np
from banditree.models.frozen import FrozenTree
from banditree.models.spec import ModelOutput, ModelSpec, Params, UpstreamFn
from banditree.models.tree_ops import FloatArray, activation_gradient, check_height


class DGTSpec(ModelSpec):
    """Hard oblique tree of height ``h`` with optional linear overparameterization.

    Parameters ``W0 .. W{L-1}`` (``W0`` takes ``d + 1`` inputs: the bias is the last)
    and ``theta`` ``(2**h, K)``.  Serving uses the collapsed :class:`FrozenTree`.
    """

    kind = "dgt"

    def __init__(
        self, n_features: int, n_outputs: int, height: int = 6, hidden: Sequence[int] = ()
    ) -> None:
        super().__init__(n_features, n_outputs)
        self.height = check_height(height)
        self.hidden = tuple(int(w) for w in hidden)
        self.n_layers = len(self.hidden) + 1
        self.regularised = tuple(f"W{i}" for i in range(self.n_layers))

    def init_params(self, rng: np.random.Generator) -> Params:
        dims = [self.n_features + 1, *self.hidden, (1 << self.height) - 1]
        params: Params = {}
        for i in range(self.n_layers):
            bound = 1.0 / math.sqrt(dims[i])
            params[f"W{i}"] = rng.uniform(-bound, bound, size=(dims[i + 1], dims[i]))
        bound = 0.1 / math.sqrt(1 << self.height)
        theta = rng.uniform(-bound, bound, size=(1 << self.height, self.n_outputs))
        params["theta"] = theta + self.output_bias
        return params

    def layers(self, params: Mapping[str, FloatArray]) -> list[FloatArray]:
        return [params[f"W{i}"] for i in range(self.n_layers)]

    def freeze(self, params: Mapping[str, FloatArray]) -> FrozenTree:
        return FrozenTree(weights=effective_weights_np(self.layers(params)), theta=params["theta"])

    def forward(self, frozen: FrozenTree, x: FloatArray) -> ModelOutput:
        leaf, row = frozen.predict_one(x)
        return ModelOutput(output=row, leaf=leaf)

    def forward_batch(self, frozen: FrozenTree, x: FloatArray) -> FloatArray:
        return frozen.predict(x)

    def gradients(
        self,
        params: Mapping[str, FloatArray],
        x: FloatArray,
        upstream: UpstreamFn,
        rng: np.random.Generator,
    ) -> Params:
        return dgt_gradients(self.layers(params), params["theta"], x, upstream, self.height)

    def export(self, frozen: FrozenTree) -> dict[str, Any]:
        return frozen.to_json()

    def to_config(self) -> dict[str, Any]:
        return {**super().to_config(), "height": self.height, "hidden": list(self.hidden)}


def dgt_gradients(
    layers: Sequence[FloatArray],
    theta: FloatArray,
    x: FloatArray,
    upstream: UpstreamFn,
    height: int,
) -> Params:
    """Algorithm 2 for one example, all layers: returns ``{"W0".., "theta"}`` gradients."""
    zs = [np.append(x, 1.0)]  # inputs of each layer
    for w in layers[:-1]:
        zs.append(w @ zs[-1])
    a = layers[-1] @ zs[-1]  # (n_int,)
    n_int = a.shape[0]
    node = 0
    for _ in range(height):
        node = 2 * node + (2 if a[node] > 0.0 else 1)
    leaf = node - n_int
    g = upstream(theta[leaf])  # (K,)
    grads: Params = {}
    grad_theta = np.zeros_like(theta)
    grad_theta[leaf] = g
    grads["theta"] = grad_theta
    delta = activation_gradient(a, theta, g, height)  # (n_int,)
    for i in range(len(layers) - 1, -1, -1):
        grads[f"W{i}"] = np.outer(delta, zs[i])
        if i:
            delta = layers[i].T @ delta
    return grads
