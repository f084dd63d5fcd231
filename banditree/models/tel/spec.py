"""TEL as a bandit model family (kind ``"tel"``): numpy parameters, conditional passes.

The learner (:class:`~banditree.learners.gradient_bandit.GradientBandit`) standardises
contexts online in front of the layer (a batch-norm needs a batch), explores on
``sigmoid(output)`` and runs RMSprop on the numpy parameters.  Decisions and updates
run Algorithms 1 and 2 in numpy (:class:`~banditree.models.tel.frozen.FrozenTEL`, no
torch on the serving path): for ensembles of up to
:data:`~banditree.models.tel.frozen.DENSE_MAX_LEAVES` leaves over every node (a fixed
handful of whole-array calls, :mod:`banditree.models.tel.dense_grad` for the updates),
for larger ones over the nodes the context reaches only; the gradients of the examples
buffered for one update come from one batched pass.  The torch layer
(:mod:`banditree.models.tel.function`) is the same maths for supervised training.

Learner options (``LearnerConfig.options``): ``gamma``, the smooth-step width,
default :data:`DEFAULT_GAMMA` = 1.0 (the paper's worst-case setting for speed and the
reference layer's default); ``height`` is the tree depth and ``n_trees`` the ensemble size.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.models.spec import BatchOutput, ModelOutput, ModelSpec, Params, UpstreamFn
from banditree.models.tel.checks import INIT_BOUND, check_depth, check_gamma
from banditree.models.tel.dense_grad import dense_forward, dense_gradients
from banditree.models.tel.frozen import FrozenTEL

DEFAULT_GAMMA = 1.0
OPTIONS = ("gamma",)


class TELSpec(ModelSpec):
    """``n_trees`` smooth-step soft trees of depth ``depth``, outputs summed.

    Parameters ``W`` ``(m, 2**d - 1, p)`` (node hyperplanes, no bias; L1/L2 apply)
    and ``O`` ``(m, 2**d, k)`` (leaf outputs).  Leaves start at
    ``U(-0.01, 0.01) + output_bias / m`` so the summed output starts at the prior.

    :meth:`forward` reports ``extras["reachable_leaves"]``: leaves the context
    reached, averaged over the trees (1.0 = hard routing in every tree), and
    ``extras["reachable_leaves_total"]``, the sum over the trees.
    """

    kind = "tel"
    regularised = ("W",)

    def __init__(
        self,
        n_features: int,
        n_outputs: int,
        depth: int = 6,
        n_trees: int = 10,
        gamma: float = DEFAULT_GAMMA,
    ) -> None:
        super().__init__(n_features, n_outputs)
        self.depth = check_depth(depth)
        if isinstance(n_trees, bool) or not isinstance(n_trees, int) or not 1 <= n_trees <= 256:
            raise ValueError(f"n_trees must be an integer in [1, 256], got {n_trees!r}")
        self.n_trees = n_trees
        self.gamma = check_gamma(gamma)

    def init_params(self, rng: np.random.Generator) -> Params:
        m, n_int, n_leaves = self.n_trees, (1 << self.depth) - 1, 1 << self.depth
        w = rng.uniform(-INIT_BOUND, INIT_BOUND, size=(m, n_int, self.n_features))
        o = rng.uniform(-INIT_BOUND, INIT_BOUND, size=(m, n_leaves, self.n_outputs))
        return {"W": w, "O": o + self.output_bias / m}

    def freeze(self, params: Mapping[str, FloatArray]) -> FrozenTEL:
        return FrozenTEL(
            np.ascontiguousarray(params["W"], dtype=np.float64),
            np.ascontiguousarray(params["O"], dtype=np.float64),
            self.gamma,
        )

    def forward(self, frozen: FrozenTEL, x: FloatArray) -> ModelOutput:
        out, total = frozen.forward_one(x)
        return ModelOutput(
            output=out,
            extras={
                "reachable_leaves": total / self.n_trees,
                "reachable_leaves_total": float(total),
            },
        )

    def forward_batch(self, frozen: FrozenTEL, x: FloatArray) -> FloatArray:
        return frozen.forward_batch(np.asarray(x, dtype=np.float64))[0]

    def forward_rows(self, frozen: FrozenTEL, x: FloatArray) -> BatchOutput:
        out, total = frozen.forward_batch(np.asarray(x, dtype=np.float64))
        totals = total.astype(np.float64)
        return BatchOutput(
            output=out,
            extras={
                "reachable_leaves": totals / self.n_trees,
                "reachable_leaves_total": totals,
            },
        )

    def gradients_batch(
        self,
        params: Mapping[str, FloatArray],
        x: FloatArray,
        upstreams: Sequence[UpstreamFn],
        rng: np.random.Generator,
    ) -> Params:
        """One forward and backward pass over the whole batch ``(B, p)``: over every node
        for small ensembles (:mod:`.dense_grad`), the reachable ones otherwise."""
        frozen = self.freeze(params)
        x = np.asarray(x, dtype=np.float64)
        if frozen.dense:  # every node: a fixed handful of numpy calls per level
            forward = dense_forward(frozen, x)
            g = self._upstream_rows(upstreams, forward.output)
            grad_w, grad_o = dense_gradients(frozen, x, forward, g)
        else:
            levels = frozen.route(x)
            g = self._upstream_rows(upstreams, frozen.outputs(levels[-1], x.shape[0]))
            grad_w, grad_o = frozen.gradients(x, levels, g)
        return {"W": grad_w, "O": grad_o}

    @staticmethod
    def _upstream_rows(upstreams: Sequence[UpstreamFn], rows: FloatArray) -> FloatArray:
        """``d loss / d output`` of every row ``(B, k)``, row ``b`` from ``upstreams[b]``."""
        g = np.stack([up(row) for up, row in zip(upstreams, rows, strict=True)])
        return g.astype(np.float64, copy=False)

    def export(self, frozen: FrozenTEL) -> dict[str, Any]:
        return {
            "kind": self.kind,
            "n_trees": self.n_trees,
            "depth": self.depth,
            "gamma": self.gamma,
            "node_weights": frozen.node_weights.tolist(),
            "leaf_weights": frozen.leaf_weights.tolist(),
        }

    def to_config(self) -> dict[str, Any]:
        return {
            **super().to_config(),
            "depth": self.depth,
            "n_trees": self.n_trees,
            "gamma": self.gamma,
        }


def tel_from_options(
    n_features: int, n_outputs: int, depth: int, n_trees: int, options: Mapping[str, Any]
) -> TELSpec:
    """TEL from a learner config's fields: ``depth`` (its height), ``options["gamma"]``."""
    unknown = sorted(set(options) - set(OPTIONS))
    if unknown:
        raise ValueError(f"options: unknown key(s) {unknown} for kind tel; known: {list(OPTIONS)}")
    gamma = options.get("gamma", DEFAULT_GAMMA)
    if isinstance(gamma, bool) or not isinstance(gamma, int | float):
        raise ValueError(f"options.gamma must be a number, got {gamma!r}")
    try:
        gamma = check_gamma(gamma)
    except ValueError as err:
        raise ValueError(f"options.{err}") from None
    return TELSpec(n_features, n_outputs, depth, n_trees, gamma)
