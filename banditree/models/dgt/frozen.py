"""The frozen, inference-only form of a hard oblique tree (numpy, no autograd)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray, IntArray
from banditree.models.dgt.tree_ops import check_height, route_batch

JSON_FORMAT = "banditree.hard_tree/v1"


def linear_term(linear: FloatArray, x: FloatArray) -> FloatArray:
    """``linear @ x`` for one example ``(d,)`` -> ``(K,)`` or a batch ``(B, d)`` -> ``(B, K)``,
    each entry summed the same way in both: one ``einsum`` loop over the features
    (a product of matrices and one of a matrix and a vector round apart, and a batch's
    decisions must be ``act``'s; ``test_rows_of_a_batch_are_the_rows_alone`` checks it)."""
    out: FloatArray = np.einsum("...d,kd->...k", x, linear)
    return out


@dataclass(frozen=True)
class FrozenTree:
    """A hard oblique tree as ``h`` dot products per decision.

    ``weights`` ``(2**h - 1, d + 1)`` is the collapsed node matrix (last column is the
    bias), ``theta`` ``(2**h, K)`` the leaf values.  Routing goes RIGHT when
    ``<w_i, [x; 1]> > 0``.  With the optional per-action ``linear`` term ``(K, d)`` the
    output for ``x`` reaching leaf ``l`` is ``theta[l] + linear @ x``.
    """

    weights: FloatArray
    theta: FloatArray
    linear: FloatArray | None = None

    def __post_init__(self) -> None:
        n_int, d1 = self.weights.shape
        height = check_height(int(n_int + 1).bit_length() - 1)
        if (1 << height) - 1 != n_int or self.theta.shape[0] != 1 << height:
            raise ValueError(
                f"weights {self.weights.shape} and theta {self.theta.shape} do not form a complete tree"
            )
        if d1 < 2:
            raise ValueError("weights need at least one feature column and the bias column")
        if self.linear is not None and self.linear.shape != (self.theta.shape[1], d1 - 1):
            raise ValueError(
                f"linear {self.linear.shape} must be (n_outputs, n_features) = "
                f"{(self.theta.shape[1], d1 - 1)}"
            )

    @classmethod
    def of_parameters(
        cls, weights: FloatArray, theta: FloatArray, linear: FloatArray | None = None
    ) -> FrozenTree:
        """The tree of a spec's own parameters, whose shapes the spec made: built without
        :meth:`__post_init__`'s checks (a learner freezes one per update)."""
        tree = object.__new__(cls)
        _set = object.__setattr__
        _set(tree, "weights", weights)
        _set(tree, "theta", theta)
        _set(tree, "linear", linear)
        return tree

    @property
    def height(self) -> int:
        return int(self.theta.shape[0]).bit_length() - 1

    @property
    def n_features(self) -> int:
        return int(self.weights.shape[1]) - 1

    @property
    def n_outputs(self) -> int:
        return int(self.theta.shape[1])

    @cached_property
    def _fast_path(self) -> tuple[tuple[FloatArray, ...], tuple[float, ...], range]:
        """Single-example fast path: one contiguous row per node and the biases as floats,
        so a decision is ``h`` ndarray.dot calls and no per-call slicing.  Built by
        :meth:`prepared` or at the first :meth:`leaf` call, not with every tree: a
        forest's trees route by :class:`~banditree.models.dgt.forest_spec.FrozenForest`
        and never need it."""
        rows = tuple(np.ascontiguousarray(row, dtype=np.float64) for row in self.weights[:, :-1])
        return rows, tuple(float(b) for b in self.weights[:, -1]), range(self.height)

    @cached_property
    def stacked(self) -> tuple[FloatArray, FloatArray, FloatArray | None]:
        """``(weights, theta, linear)`` as one-tree stacks ``(1, ...)``, C-contiguous: what
        the compiled kernel reads (:func:`banditree.kernel.decide_rows`); made once."""
        linear = None if self.linear is None else np.ascontiguousarray(self.linear)[None]
        return (
            np.ascontiguousarray(self.weights, dtype=np.float64)[None],
            np.ascontiguousarray(self.theta, dtype=np.float64)[None],
            linear,
        )

    def prepared(self) -> FrozenTree:
        """This tree with its single-example fast path built now, where it is frozen (a
        learner's update, off the request path), not at its first decision."""
        self._fast_path  # noqa: B018 - built for its cache
        return self

    def leaf(self, x: FloatArray) -> int:
        """Leaf index for one example ``(d,)``: ``h`` dot products, RIGHT when ``> 0``."""
        rows, bias, levels = self._fast_path
        node = 0
        for _ in levels:
            node = 2 * node + (2 if rows[node].dot(x) + bias[node] > 0.0 else 1)
        return node - len(rows)

    def predict_one(self, x: FloatArray) -> tuple[int, FloatArray]:
        """``(leaf index, leaf row (K,))`` for one example ``(d,)``."""
        leaf = self.leaf(x)
        if self.linear is None:
            return leaf, self.theta[leaf]
        return leaf, self.theta[leaf] + linear_term(self.linear, x)

    def leaves(self, x: FloatArray) -> IntArray:
        """Leaf indices for a batch ``(B, d)`` -> ``(B,)``."""
        return route_batch(self.weights[:, :-1], x, self.height, self.weights[:, -1])

    def outputs(self, x: FloatArray, leaves: IntArray) -> FloatArray:
        """Outputs ``(B, K)`` of a batch ``(B, d)`` whose reached ``leaves`` are known."""
        if self.linear is None:
            return self.theta[leaves]
        out = linear_term(self.linear, x)
        out += self.theta[leaves]
        return out

    def predict(self, x: FloatArray) -> FloatArray:
        """Outputs for a batch ``(B, d)`` -> ``(B, K)`` (the leaf rows, plus the linear term)."""
        return self.outputs(x, self.leaves(x))

    def to_json(self) -> dict[str, Any]:
        """The hard tree as nested JSON-ready data: nodes with weights and bias, leaves with values."""
        n_int = self.weights.shape[0]
        nodes = [
            {
                "id": i,
                "depth": int(i + 1).bit_length() - 1,
                "weights": self.weights[i, :-1].tolist(),
                "bias": float(self.weights[i, -1]),
                "left": 2 * i + 1,
                "right": 2 * i + 2,
            }
            for i in range(n_int)
        ]
        leaves = [
            {"id": n_int + j, "leaf": j, "value": self.theta[j].tolist()}
            for j in range(self.theta.shape[0])
        ]
        data: dict[str, Any] = {
            "format": JSON_FORMAT,
            "rule": "go right when dot(weights, x) + bias > 0",
            "height": self.height,
            "n_features": self.n_features,
            "n_outputs": self.n_outputs,
            "nodes": nodes,
            "leaves": leaves,
        }
        if self.linear is not None:
            data["output"] = "leaf value + dot(linear[k], x) for output k"
            data["linear"] = self.linear.tolist()
        return data

    def dumps(self) -> str:
        """JSON text of :meth:`to_json` (floats written with full precision)."""
        return json.dumps(self.to_json())

    @classmethod
    def from_json(cls, data: dict[str, Any] | str) -> FrozenTree:
        """Rebuild a predictor from :meth:`to_json` output (or its text)."""
        if isinstance(data, str):
            data = json.loads(data)
        assert isinstance(data, dict)
        if data.get("format") != JSON_FORMAT:
            raise ValueError(f"not a {JSON_FORMAT} document (format={data.get('format')!r})")
        nodes = sorted(data["nodes"], key=lambda n: n["id"])
        leaves = sorted(data["leaves"], key=lambda n: n["leaf"])
        weights = np.array([[*n["weights"], n["bias"]] for n in nodes], dtype=np.float64)
        theta = np.array([leaf["value"] for leaf in leaves], dtype=np.float64)
        linear = data.get("linear")
        return cls(
            weights=weights,
            theta=theta,
            linear=None if linear is None else np.array(linear, dtype=np.float64),
        )
