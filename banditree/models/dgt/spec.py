"""DGT as a bandit model: numpy parameters and hand-derived gradients (Algorithm 2)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from functools import lru_cache
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray, IntArray, scalar_array
from banditree.models.dgt.frozen import FrozenTree
from banditree.models.dgt.tree_ops import check_height, effective_weights_np, path_scores
from banditree.models.spec import (
    BatchOutput,
    ModelOutput,
    ModelSpec,
    Params,
    UpstreamFn,
    upstream_rows,
)


class DGTSpec(ModelSpec):
    """Hard oblique tree of height ``h`` with optional linear overparameterization.

    Parameters ``W0 .. W{L-1}`` (``W0`` takes ``d + 1`` inputs: the bias is the last),
    ``theta`` ``(2**h, K)``, with ``shared_bias`` ``bias`` ``(K,)`` and with ``linear``
    ``linear`` ``(K, d)``: the output for ``x`` reaching leaf ``l`` is
    ``theta[l] + bias + linear @ x``.
    The shared per-action ``bias`` and the per-action linear term learn from every
    round, so a leaf that has seen few rounds starts from the tree-wide (linear)
    estimate instead of from nothing, and the tree refines it.  With ``linear`` both
    are stepped by AdaGrad (:attr:`summed`), ``linear_lr_scale`` times the learning
    rate, divided by ``sqrt(d)`` for ``linear`` (:attr:`lr_scales`); without it the
    bias is stepped like the tree, ``linear_lr_scale`` times the learning rate.  Serving uses the
    collapsed :class:`FrozenTree` (``bias`` folded into its leaves, ``linear`` beside them).
    """

    #: a row's outputs are summed alike alone or in a batch (:func:`linear_term`); its
    #: node activations are dot products either way, which round apart only where one
    #: is within rounding of zero
    rows_exact = True

    kind = "dgt"

    def __init__(
        self,
        n_features: int,
        n_outputs: int,
        height: int = 6,
        hidden: Sequence[int] = (),
        shared_bias: bool = True,
        linear: bool = False,
        linear_lr_scale: float = 1.0,
    ) -> None:
        super().__init__(n_features, n_outputs)
        if not (math.isfinite(linear_lr_scale) and linear_lr_scale > 0.0):
            raise ValueError(f"linear_lr_scale must be > 0, got {linear_lr_scale}")
        self.shared_bias = bool(shared_bias)
        self.linear = bool(linear)
        self.linear_lr_scale = float(linear_lr_scale)
        self.lr_scales = {"bias": self.linear_lr_scale} if self.shared_bias else {}
        if self.linear:
            # one step moves each weight by about the step size, so the linear term's
            # output by up to step * d: 1 / sqrt(d) measured best (bandit_vs_vw)
            self.lr_scales["linear"] = self.linear_lr_scale / math.sqrt(self.n_features)
            # parameters that learn from every round: AdaGrad's decaying step
            self.summed = tuple(self.lr_scales)
        self.height = check_height(height)
        self.hidden = tuple(int(w) for w in hidden)
        self.n_layers = len(self.hidden) + 1
        self._layer_names = tuple(f"W{i}" for i in range(self.n_layers))
        self.regularised = self._layer_names

    def init_params(self, rng: np.random.Generator) -> Params:
        dims = [self.n_features + 1, *self.hidden, (1 << self.height) - 1]
        params: Params = {}
        for i in range(self.n_layers):
            bound = 1.0 / math.sqrt(dims[i])
            params[f"W{i}"] = rng.uniform(-bound, bound, size=(dims[i + 1], dims[i]))
        bound = 0.1 / math.sqrt(1 << self.height)
        theta = rng.uniform(-bound, bound, size=(1 << self.height, self.n_outputs))
        if self.shared_bias:
            params["theta"] = theta
            params["bias"] = np.full(self.n_outputs, self.output_bias)
        else:
            params["theta"] = theta + self.output_bias
        if self.linear:
            params["linear"] = np.zeros((self.n_outputs, self.n_features))
        return params

    def upgrade_params(self, params: Params) -> Params:
        """Checkpoints written before the shared ``bias`` hold it inside ``theta``;
        those written before the ``linear`` term load it as zero (the same outputs)."""
        if self.shared_bias and "bias" not in params and "theta" in params:
            params["bias"] = np.zeros(params["theta"].shape[1])
        if self.linear and "linear" not in params and "theta" in params:
            params["linear"] = np.zeros((params["theta"].shape[1], self.n_features))
        return params

    def layers(self, params: Mapping[str, FloatArray]) -> list[FloatArray]:
        return [params[name] for name in self._layer_names]

    def freeze(self, params: Mapping[str, FloatArray]) -> FrozenTree:
        """The frozen tree, its one-context fast path built (:meth:`FrozenTree.prepared`)."""
        return self.frozen_tree(params).prepared()

    def freeze_unprepared(self, params: Mapping[str, FloatArray]) -> FrozenTree:
        return self.frozen_tree(params)

    def prepare(self, frozen: FrozenTree) -> FrozenTree:
        return frozen.prepared()

    def frozen_tree(self, params: Mapping[str, FloatArray]) -> FrozenTree:
        """The frozen tree alone (a forest's member: the forest routes one context itself)."""
        return FrozenTree.of_parameters(
            weights=effective_weights_np(self.layers(params)),
            theta=params["theta"] + params["bias"] if self.shared_bias else params["theta"],
            linear=params["linear"] if self.linear else None,  # replaced whole, never mutated
        )

    def forward(self, frozen: FrozenTree, x: FloatArray) -> ModelOutput:
        leaf, row = frozen.predict_one(x)
        return ModelOutput(output=row, leaf=leaf)

    def forward_batch(self, frozen: FrozenTree, x: FloatArray) -> FloatArray:
        return frozen.predict(x)

    def leaf_layout(self) -> tuple[int, int]:
        return 1, 1 << self.height

    def leaves_batch(self, frozen: FrozenTree, x: FloatArray) -> IntArray:
        return frozen.leaves(x)[None, :]

    def forward_rows(self, frozen: FrozenTree, x: FloatArray) -> BatchOutput:
        leaves = frozen.leaves(x)
        return BatchOutput(output=frozen.outputs(x, leaves), leaf=leaves)

    def gradients_batch(
        self,
        params: Mapping[str, FloatArray],
        x: FloatArray,
        upstreams: Sequence[UpstreamFn],
        rng: np.random.Generator,
    ) -> Params:
        return dgt_gradients_batch(
            self.layers(params),
            params["theta"],
            x,
            upstreams,
            self.height,
            bias=params.get("bias"),
            linear=params.get("linear"),
            graded=self._graded_extras,
        )

    @property
    def _graded_extras(self) -> tuple[bool, bool]:
        """Whether ``bias`` and ``linear`` get gradients (not when fitted elsewhere)."""
        skip = self.fitted_elsewhere
        return "bias" not in skip, "linear" not in skip

    def export(self, frozen: FrozenTree) -> dict[str, Any]:
        return frozen.to_json()

    def to_config(self) -> dict[str, Any]:
        return {
            **super().to_config(),
            "height": self.height,
            "hidden": list(self.hidden),
            "shared_bias": self.shared_bias,
            "linear": self.linear,
            "linear_lr_scale": self.linear_lr_scale,
        }


def _constant(value: float) -> FloatArray:
    out = scalar_array(value)
    out.setflags(write=False)
    return out


#: the gradient's constants as 0-d arrays: numpy's faster operand, the same arithmetic
_ZERO, _ONE, _MINUS_ONE = _constant(0.0), _constant(1.0), _constant(-1.0)


@lru_cache(maxsize=256)
def _ones_column(rows: int) -> FloatArray:
    """``np.ones((rows, 1))``, read-only: the bias input of a batch (made once per size)."""
    out = np.ones((rows, 1))
    out.setflags(write=False)
    return out


@lru_cache(maxsize=16)
def _height(height: int) -> FloatArray:
    return _constant(float(height))


@lru_cache(maxsize=16)
def path_matrix(height: int) -> FloatArray:
    """``S`` as a dense ``(2**h, 2**h - 1)`` matrix: ``q = S @ sign`` (read-only, cached)."""
    s: FloatArray = path_scores(np.eye((1 << height) - 1), height).T.copy()
    s.setflags(write=False)
    return s


def dgt_gradients(
    layers: Sequence[FloatArray],
    theta: FloatArray,
    x: FloatArray,
    upstream: UpstreamFn,
    height: int,
) -> Params:
    """Algorithm 2 for one example ``(d,)``, all layers: ``{"W0".., "theta"}`` gradients."""
    return dgt_gradients_batch(layers, theta, x[None, :], [upstream], height)


def dgt_gradients_batch(
    layers: Sequence[FloatArray],
    theta: FloatArray,
    x: FloatArray,
    upstreams: Sequence[UpstreamFn],
    height: int,
    weights: FloatArray | None = None,
    bias: FloatArray | None = None,
    linear: FloatArray | None = None,
    graded: tuple[bool, bool] = (True, True),
) -> Params:
    """Algorithm 2 summed over a batch ``(B, d)``, example ``b`` with ``upstreams[b]``.

    ``weights`` ``(B,)`` scale each example's gradient (online bagging).  With the
    shared ``bias`` ``(K,)`` leaf ``l`` outputs ``theta[l] + bias`` and with the
    ``linear`` term ``(K, d)`` example ``b`` adds ``linear @ x[b]``; the result holds
    their gradients too.  Both are the same for every leaf, so they cancel from the
    node gradient (``dq`` sums to zero over the leaves).  ``graded``: whether the result
    holds ``bias``'s and ``linear``'s gradients (a learner that fits them another way
    saves their products, their finiteness checks and their accumulation).  The path
    algebra uses the dense path matrix ``S`` (``q = sign S^T``, adjoint ``dq S``):
    two small products instead of ``2h`` reshapes.  The reached leaf is the unique
    one with ``q = h``.
    """
    s = path_matrix(height)
    zs = [np.concatenate((x, _ones_column(x.shape[0])), axis=1)]  # layer inputs, bias last
    for w in layers[:-1]:
        zs.append(zs[-1] @ w.T)
    a = zs[-1] @ layers[-1].T  # (B, n_int)
    q = np.where(a > _ZERO, _ONE, _MINUS_ONE) @ s.T  # (B, n_leaves): integers in [-h, h]
    leaves = q.argmax(axis=1)
    outputs = theta if bias is None else theta + bias
    reached = outputs[leaves]  # (B, K)
    if linear is not None:
        reached += x @ linear.T
    g = upstream_rows(upstreams, reached)
    if weights is not None:
        g *= weights[:, None]
    grad_theta = np.zeros(theta.shape)
    np.add.at(grad_theta, leaves, g)
    grads: Params = {"theta": grad_theta}
    if bias is not None and graded[0]:
        grads["bias"] = np.add.reduce(g, axis=0)
    if linear is not None and graded[1]:
        grads["linear"] = g.T @ x
    p = np.exp(q - _height(height))  # softmax over leaves; the maximum q is h
    p /= np.add.reduce(p, axis=1, keepdims=True)
    u = g @ outputs.T  # (B, n_leaves): output_l . g_b
    dq = p * (u - np.add.reduce(p * u, axis=1, keepdims=True))
    delta = (dq @ s) * (np.abs(a) <= _ONE)  # (B, n_int): straight-through sign
    for i in range(len(layers) - 1, -1, -1):
        grads[f"W{i}"] = delta.T @ zs[i]
        if i:
            delta = delta @ layers[i]
    return grads
