"""Random hinge forests and ferns as a bandit model (kind ``"hinge"``), numpy only.

Design choices (see also ``docs``: algorithms section 4):

* **K outputs**: every leaf holds a ``K``-vector (one value per action), the paper's
  "arbitrary tensor" leaf weights.  Tree ``m`` gives ``w[m, leaf] * |r*|`` ``(K,)``;
  the forest output is ``bias + reduce_m(...)`` with a learnable ``bias`` ``(K,)`` that
  starts at :attr:`ModelSpec.output_bias` (``logit(1/K)`` for classification, since a
  hinge tree cannot carry a constant on its own).  One traversal per tree serves all
  actions, so acting costs ``T * D`` comparisons whatever ``K``.
* **Inputs**: the learner standardises contexts online, which is the standardisation
  in front of the thresholds when there is no pool.  With ``pool > 0`` the decisions
  read ``pool`` learnable inner-product features ``P x`` whose rows start as random
  unit vectors, so they begin at about unit scale on standardised contexts (a bandit
  has no batches to standardise them with; the torch module
  :class:`~banditree.models.hinge.modules.PooledHingeForest` keeps running statistics instead).
* **Fixed feature indices** are stored with the parameters (``feature_index``, never
  given a gradient) so that checkpoints round-trip them with everything else.

Options (``LearnerConfig.options``): ``ferns`` (bool, default False), ``pool`` (int in
``[0, 4096]``, default 0 = decisions on the contexts), ``reduction`` (``"sum"``
default, or ``"mean"``).  ``n_trees`` (default 10) and ``height`` (the depth ``D``,
default 6 for classification, 8 for regression) come from the config.  With the
mean, a step moves the output ``T`` times less than with the sum, and single-pass
runs learned less with it, hence the default (the figures:
``docs/explanation/defaults.md``, hinge forests).  More trees and a
pool help on harder data (Letter) at some cost in speed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.models.hinge.frozen import FrozenHingeForest
from banditree.models.hinge.ops import (
    check_depth,
    hinge_gradients,
    hinge_traverse,
    hinge_tree_outputs,
    init_forest,
)
from banditree.models.spec import (
    MAX_PARAMETERS,
    BatchOutput,
    ModelOutput,
    ModelSpec,
    Params,
    UpstreamFn,
)

HINGE_OPTIONS = ("ferns", "pool", "reduction")
MAX_POOL = 4096


class HingeSpec(ModelSpec):
    """``n_trees`` random hinge trees (or ferns) of depth ``depth`` with ``K``-vector leaves.

    Parameters: ``thresholds`` ``(T, N)``, ``leaf_weights`` ``(T, 2**D, K)``, ``bias``
    ``(K,)``, ``feature_index`` ``(T, N)`` (fixed) and, with a pool, ``pool`` ``(P, d)``.
    """

    kind = "hinge"

    def __init__(
        self,
        n_features: int,
        n_outputs: int,
        n_trees: int = 10,
        depth: int = 6,
        ferns: bool = False,
        pool: int = 0,
        reduction: str = "sum",
    ) -> None:
        super().__init__(n_features, n_outputs)
        if not (isinstance(n_trees, int) and n_trees >= 1):
            raise ValueError(f"n_trees must be an integer >= 1, got {n_trees!r}")
        if not isinstance(ferns, bool):
            raise ValueError(f"options.ferns must be true or false, got {ferns!r}")
        if not (isinstance(pool, int) and not isinstance(pool, bool) and 0 <= pool <= MAX_POOL):
            raise ValueError(f"options.pool must be an integer in [0, {MAX_POOL}], got {pool!r}")
        if pool * n_features > MAX_PARAMETERS:
            raise ValueError(
                f"options.pool of {pool} features over {n_features} inputs needs more than "
                f"{MAX_PARAMETERS} parameters"
            )
        if reduction not in ("mean", "sum"):
            raise ValueError(f"options.reduction must be 'mean' or 'sum', got {reduction!r}")
        self.n_trees = n_trees
        self.depth = check_depth(depth)
        self.ferns = ferns
        self.pool = pool
        self.reduction = reduction
        self.n_inputs = pool or n_features
        self.regularised = ("pool",) if pool else ()

    @classmethod
    def from_options(
        cls, n_features: int, n_outputs: int, n_trees: int, depth: int, options: Mapping[str, Any]
    ) -> HingeSpec:
        """Build from a learner config's fields, validating ``options`` (unknown keys refused)."""
        unknown = sorted(set(options) - set(HINGE_OPTIONS))
        if unknown:
            raise ValueError(f"options.{unknown[0]} is not a hinge option; known: {HINGE_OPTIONS}")
        return cls(
            n_features,
            n_outputs,
            n_trees=n_trees,
            depth=depth,
            ferns=options.get("ferns", False),
            pool=options.get("pool", 0),
            reduction=options.get("reduction", "sum"),
        )

    def init_params(self, rng: np.random.Generator) -> Params:
        features, thresholds, weights = init_forest(
            rng, self.n_trees, self.depth, self.n_inputs, self.n_outputs, self.ferns
        )
        params: Params = {
            "feature_index": features.astype(np.float64),
            "thresholds": thresholds,
            "leaf_weights": weights,
            "bias": np.full(self.n_outputs, self.output_bias),
        }
        if self.pool:
            rows = rng.normal(size=(self.pool, self.n_features))
            params["pool"] = rows / np.linalg.norm(rows, axis=1, keepdims=True)
        return params

    def freeze(self, params: Mapping[str, FloatArray]) -> FrozenHingeForest:
        pool = params.get("pool")
        return FrozenHingeForest(
            features=np.ascontiguousarray(params["feature_index"], dtype=np.int64),
            thresholds=np.ascontiguousarray(params["thresholds"]),
            weights=np.ascontiguousarray(params["leaf_weights"]),
            bias=np.array(params["bias"]),
            pool=None if pool is None else np.ascontiguousarray(pool),
            depth=self.depth,
            ferns=self.ferns,
            mean=self.reduction == "mean",
        )

    def _reduce(self, tree_out: FloatArray) -> FloatArray:
        # tree_out: (..., T, K) -> (..., K)
        out: FloatArray = (
            tree_out.mean(axis=-2) if self.reduction == "mean" else tree_out.sum(axis=-2)
        )
        return out

    def forward(self, frozen: FrozenHingeForest, x: FloatArray) -> ModelOutput:
        out, leaf = frozen.forward_one(x)
        return ModelOutput(output=out, leaf=leaf)

    def forward_batch(self, frozen: FrozenHingeForest, x: FloatArray) -> FloatArray:
        return frozen.forward_batch(x)

    def forward_rows(self, frozen: FrozenHingeForest, x: FloatArray) -> BatchOutput:
        out, leaf = frozen.forward_batch_leaves(x)
        return BatchOutput(output=out, leaf=leaf)

    def gradients_batch(
        self,
        params: Mapping[str, FloatArray],
        x: FloatArray,
        upstreams: Sequence[UpstreamFn],
        rng: np.random.Generator,
    ) -> Params:
        """One traversal of the batch ``(B, d)``; the summed sparse eqs. 11-12."""
        frozen = self.freeze(params)
        z = x if frozen.pool is None else x @ frozen.pool.T  # (B, F)
        leaf, margin, node = hinge_traverse(
            z, frozen.features, frozen.thresholds, self.depth, self.ferns
        )
        out = frozen.bias + self._reduce(hinge_tree_outputs(frozen.weights, leaf, margin))
        g = np.stack([up(row) for up, row in zip(upstreams, out, strict=True)])  # (B, K)
        per_tree = g / self.n_trees if self.reduction == "mean" else g
        grad_w, grad_t, grad_z = hinge_gradients(
            frozen.weights,
            frozen.features,
            leaf,
            margin,
            node,
            np.broadcast_to(per_tree[:, None, :], (*leaf.shape, self.n_outputs)),
            self.n_inputs,
        )
        grads: Params = {"thresholds": grad_t, "leaf_weights": grad_w, "bias": g.sum(axis=0)}
        if frozen.pool is not None:
            grads["pool"] = grad_z.T @ x
        return grads

    def export(self, frozen: FrozenHingeForest) -> dict[str, Any]:
        return {
            **self.to_config(),
            "features": frozen.features.tolist(),
            "thresholds": frozen.thresholds.tolist(),
            "leaf_weights": frozen.weights.tolist(),
            "bias": frozen.bias.tolist(),
            "pool": None if frozen.pool is None else frozen.pool.tolist(),
        }

    def to_config(self) -> dict[str, Any]:
        return {
            **super().to_config(),
            "n_trees": self.n_trees,
            "depth": self.depth,
            "ferns": self.ferns,
            "pool": self.pool,
            "reduction": self.reduction,
        }
