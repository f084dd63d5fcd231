"""The Tree Ensemble Layer in numpy: conditional forward and backward passes, no torch.

The serving and learning form of :mod:`banditree.models.tel.function` (same maths,
same layout: ``m`` perfect trees of depth ``d``, nodes breadth-first, node ``i``
sends ``x`` LEFT with probability ``S(<w_i, x>)``).  Both passes walk the trees one
level at a time over the *reachable* nodes only (Algorithm 1 of seed 003): a child
is kept only when its probability is above zero, so a node outside the fractional
region of the smooth step sends the example down one side and the other subtree is
never touched.

Storage order: level ``l`` holds its ``E = m 2**l`` nodes in *position* order, chosen
so that the children of position ``i`` are positions ``i`` (LEFT) and ``i + E``
(RIGHT) of the next level.  While every node is reachable a level is then one
product with the whole level matrix (no gather, no index arithmetic); ``orders[l]``
maps positions back to ``column = tree * 2**l + node within the level``.  The node
weights are divided by ``gamma``, so ``<w, x> / gamma`` is one product and the smooth
step is the cubic ``S = 1/2 + u (3/2 - 2 u**2)`` of ``u = clip(<w, x> / gamma, -1/2,
1/2)``: exactly 0 or 1 outside the fractional region.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from banditree.core.arrays import FloatArray, IntArray, clip_ufunc
from banditree.models.tel.layout import tree_layout

#: sign of the cubic for the LEFT (S) and RIGHT (1 - S) child
_SIGNS = np.array([1.0, -1.0])
_SIGN_COLUMN = _SIGNS[:, None]
_count_nonzero = np.count_nonzero
_add, _subtract, _multiply, _dot = np.add, np.subtract, np.multiply, np.dot
#: up to this many leaves (all trees) the forward passes compute every node: a fixed
#: handful of whole-array numpy calls, cheaper than pruning at this size
DENSE_MAX_LEAVES = 4096
_multiply_levels = np.multiply.reduce
#: entries of a dense batch pass computed together: a chunk's ``(rows, 2 nodes)`` arrays
#: stay in the CPU cache (half a MiB; the figure: ``docs/decisions/0008-library-hot-paths.md``)
_DENSE_BATCH_ENTRIES = 1 << 16


@dataclass(frozen=True)
class RoutedLevel:
    """The reachable entries of one level for a batch (what the backward pass reads).

    ``parent``/``side``/``branch`` are empty at the root level; ``branch`` is the
    probability of the step from the parent (``S`` or ``1 - S``); ``u`` is the
    clipped ``<w, x> / gamma`` (empty at the leaf level).
    """

    sample: IntArray  # (E,)
    position: IntArray  # (E,) storage position within the level (see the module notes)
    prob: FloatArray  # (E,) P(x -> node) > 0
    parent: IntArray  # (E,) entry of the parent in the previous level
    side: IntArray  # (E,) 0 = LEFT child of its parent, 1 = RIGHT
    branch: FloatArray  # (E,) P(parent -> node)
    u: FloatArray  # (E,)


@dataclass(frozen=True)
class FrozenTEL:
    """One parameter version of a TEL in numpy (the form decisions and updates read).

    ``node_weights`` ``(m, 2**d - 1, p)`` and ``leaf_weights`` ``(m, 2**d, k)`` are the
    parameters as given; the per-level scaled weights are derived from them.
    """

    node_weights: FloatArray
    leaf_weights: FloatArray
    gamma: float
    _levels: tuple[FloatArray, ...] = field(init=False, repr=False, compare=False)
    _orders: tuple[IntArray, ...] = field(init=False, repr=False, compare=False)
    _leaves: FloatArray = field(init=False, repr=False, compare=False)
    _root_prob: FloatArray = field(init=False, repr=False, compare=False)
    _double_nodes_t: FloatArray = field(init=False, repr=False, compare=False)
    _scaled_leaves_t: FloatArray = field(init=False, repr=False, compare=False)
    _spans: tuple[slice, ...] = field(init=False, repr=False, compare=False)
    _parent_paths: IntArray = field(init=False, repr=False, compare=False)
    _last_level: slice = field(init=False, repr=False, compare=False)
    _node_rows: IntArray = field(init=False, repr=False, compare=False)
    _dense: bool = field(init=False, repr=False, compare=False)
    #: the compiled kernel's arrays (:meth:`kernel_arrays`), made on first use
    _kernel: tuple[FloatArray, FloatArray] | None = field(
        init=False, default=None, repr=False, compare=False
    )

    def __post_init__(self) -> None:
        m, n_int, p = self.node_weights.shape
        depth = n_int.bit_length()
        if (1 << depth) - 1 != n_int or self.leaf_weights.shape[:2] != (m, 1 << depth):
            raise ValueError(
                f"node_weights {self.node_weights.shape} and leaf_weights "
                f"{self.leaf_weights.shape} do not form perfect trees"
            )
        layout = tree_layout(m, depth)
        # every node, level after level in position order, its weights divided by gamma
        nodes = self.node_weights.reshape(-1, p).take(layout.node_rows, 0)
        nodes *= 1.0 / self.gamma
        leaves = self.leaf_weights.reshape(m << depth, -1).take(layout.orders[-1], 0)
        for name, value in (
            # the steps of the paths to the nodes of the last level, and that level
            ("_parent_paths", np.ascontiguousarray(layout.paths[:-1, : m << (depth - 1)])),
            ("_last_level", layout.level_spans[-1]),
            ("_node_rows", layout.node_rows),
            ("_dense", (m << depth) <= DENSE_MAX_LEAVES),
            ("_levels", tuple(nodes[span] for span in layout.level_spans)),
            ("_orders", layout.orders),
            ("_leaves", leaves),
            ("_root_prob", np.ones(m)),
            # the dense passes (see _odd_steps), transposed (x @ nodes_t and leaves_t @ P
            # are the faster products for one context): every node times 2, the leaves
            # divided by the 4**depth that the products of 4 S carry
            ("_double_nodes_t", np.ascontiguousarray((nodes * 2.0).T)),
            ("_scaled_leaves_t", np.ascontiguousarray((leaves * 0.25**depth).T)),
            # the nodes of each level below the root level among the dense nodes
            ("_spans", layout.level_spans[1:]),
        ):
            object.__setattr__(self, name, value)

    @property
    def n_trees(self) -> int:
        return int(self.node_weights.shape[0])

    def kernel_arrays(self) -> tuple[FloatArray, FloatArray]:
        """``(nodes, leaves)`` as the compiled kernel walks them
        (:func:`banditree.kernel.tel_decide`): the node weights divided by gamma (the
        numbers of ``_levels``, tree-major and breadth-first as stored) and the leaf
        weights, divided by ``4**depth`` when :attr:`dense` (``_scaled_leaves_t``'s
        numbers), C-contiguous; made on first use and kept with this version."""
        kept = self._kernel
        if kept is None:
            nodes = np.multiply(self.node_weights, 1.0 / self.gamma)
            leaves = self.leaf_weights * 0.25**self.depth if self._dense else self.leaf_weights
            kept = (np.ascontiguousarray(nodes), np.ascontiguousarray(leaves))
            object.__setattr__(self, "_kernel", kept)
        return kept

    @property
    def depth(self) -> int:
        return len(self._levels)

    @property
    def dense(self) -> bool:
        """Whether :meth:`forward_one` and :meth:`forward_batch` compute every node."""
        return self._dense

    def forward_one(
        self, x: FloatArray, visited: list[IntArray] | None = None
    ) -> tuple[FloatArray, int]:
        """Summed output ``(k,)`` for one context ``(p,)`` and the reachable leaves (all trees).

        Small ensembles (:attr:`dense`) take :meth:`forward_one_dense`, others the
        conditional pass.  ``visited``, when given, receives the columns (``tree *
        2**l + node within the level``) of each level the conditional pass computed
        ``<w, x>`` for, then the reached leaves.
        """
        if self._dense and visited is None:
            return self.forward_one_dense(x)
        return self.forward_one_conditional(x, visited)

    @staticmethod
    def _odd_steps(v: FloatArray) -> FloatArray:
        """``v (3 - v**2)`` of ``v``, ``2 <w, x> / gamma`` of every node (clipped in place).

        With ``v = 2 u`` clipped to ``[-1, 1]``, ``2 + v (3 - v**2) = 4 (1/2 + u (3/2 - 2
        u**2)) = 4 S(u)`` and ``2 - v (3 - v**2) = 4 (1 - S(u))``: the LEFT and RIGHT
        steps, times 4.  Every scaling is by a power of two, so the numbers are exactly
        those of ``S``; the ``4**depth`` of a leaf's product is divided out of the leaves.
        """
        # by the ufuncs (the operators dispatch through Python-level wrappers)
        clip_ufunc(v, -1.0, 1.0, out=v)
        odd = _multiply(v, v)
        _subtract(3.0, odd, out=odd)
        _multiply(odd, v, out=odd)
        return odd

    def forward_one_dense(self, x: FloatArray) -> tuple[FloatArray, int]:
        """:meth:`forward_one` computing every node: one product for all the nodes of all
        the trees, the smooth step on the whole array, then the probability of every node
        of the last level as the product of the steps on its path (one gather, one
        reduction over the levels), times its two steps (one product) for the leaves.

        About a dozen numpy calls whatever the depth: at this size numpy's per-call
        cost, not arithmetic, sets the time.
        """
        # np.dot and the ufuncs, not ``@`` and the operators (their Python-level
        # dispatch is a tenth of the call here, docs/decisions/0008; the same numbers)
        steps = _multiply(self._odd_steps(_dot(x, self._double_nodes_t)), _SIGN_COLUMN)
        _add(steps, 2.0, out=steps)  # (2, nodes): 4 S, then 4 (1 - S)
        prob = _multiply_levels(steps.take(self._parent_paths), axis=0)  # last level's nodes
        # children of position i: i and i + E (the leaves' products in the same order
        # as a gather over the whole paths, a third fewer entries gathered)
        prob = _multiply(steps[:, self._last_level], prob).ravel()  # 4**depth P(x -> leaf)
        out: FloatArray = _dot(self._scaled_leaves_t, prob)
        return out, int(_count_nonzero(prob))

    def forward_one_conditional(
        self, x: FloatArray, visited: list[IntArray] | None = None
    ) -> tuple[FloatArray, int]:
        """:meth:`forward_one` over the reachable nodes only (Algorithm 1), level by level."""
        position: IntArray | None = None  # None: every node of the level is reachable
        prob = self._root_prob
        for level, weights in enumerate(self._levels):
            z = (weights @ x) if position is None else (weights.take(position, 0) @ x)
            if visited is not None:
                order = self._orders[level]
                visited.append(order if position is None else order.take(position))
            np.minimum(z, 0.5, out=z)
            np.maximum(z, -0.5, out=z)
            left = z * z
            left *= -2.0
            left += 1.5
            left *= z
            left += 0.5  # S(<w, x>)
            left *= prob  # P(x -> LEFT child)
            prob = np.concatenate((left, prob - left))
            if position is not None:
                position = np.concatenate((position, position + weights.shape[0]))
            keep = np.flatnonzero(prob)
            if keep.size != prob.size:  # a hard node: prune its other side
                position = keep if position is None else position.take(keep)
                prob = prob.take(keep)
        if visited is not None:
            order = self._orders[-1]
            visited.append(order if position is None else order.take(position))
        leaves = self._leaves if position is None else self._leaves.take(position, 0)
        out: FloatArray = prob @ leaves
        return out, int(prob.size)

    def route(self, x: FloatArray) -> list[RoutedLevel]:
        """Algorithm 1 for a batch ``(B, p)``: the reachable entries of every level.

        Entries stay sample-major; the last element is the leaf level.
        """
        batch, m = x.shape[0], self.n_trees
        sample = np.repeat(np.arange(batch, dtype=np.int64), m)
        position = np.tile(np.arange(m, dtype=np.int64), batch)
        prob = np.ones(batch * m)
        none_int, none_float = np.empty(0, dtype=np.int64), np.empty(0)
        parent, side, branch = none_int, none_int, none_float
        levels: list[RoutedLevel] = []
        for weights in self._levels:
            u = np.einsum("ij,ij->i", weights.take(position, 0), x.take(sample, 0))
            np.minimum(u, 0.5, out=u)
            np.maximum(u, -0.5, out=u)
            levels.append(RoutedLevel(sample, position, prob, parent, side, branch, u))
            step = (u * (1.5 - 2.0 * u * u))[:, None] * _SIGNS
            step += 0.5  # (E, 2): S, 1 - S
            children_prob = (step * prob[:, None]).ravel()
            keep = np.flatnonzero(children_prob > 0.0)
            parent, side = keep >> 1, keep & 1
            branch = step.ravel()[keep]
            sample = sample[parent]
            position = position[parent] + side * weights.shape[0]
            prob = children_prob[keep]
        levels.append(RoutedLevel(sample, position, prob, parent, side, branch, none_float))
        return levels

    def forward_batch(self, x: FloatArray) -> tuple[FloatArray, IntArray]:
        """Summed outputs ``(B, k)`` and reachable leaves per sample ``(B,)``.

        Small ensembles (:attr:`dense`) take :meth:`forward_batch_dense`, others the
        conditional :meth:`forward_batch_conditional`.
        """
        if self.dense:
            return self.forward_batch_dense(x)
        return self.forward_batch_conditional(x)

    def forward_batch_dense(self, x: FloatArray) -> tuple[FloatArray, IntArray]:
        """:meth:`forward_batch` computing every node (as :meth:`forward_one_dense`).

        With many rows the per-call cost is shared, and one product per level (the
        children of position ``i`` are ``i`` and ``i + E``) moves less memory than the
        gather along every path; the numbers are the same.
        """
        batch, m, n_nodes = x.shape[0], self.n_trees, self._double_nodes_t.shape[1]
        out = np.empty((batch, self._leaves.shape[1]))
        counts = np.empty(batch, dtype=np.int64)
        chunk = max(1, _DENSE_BATCH_ENTRIES // (2 * n_nodes))
        for start in range(0, batch, chunk):
            rows = slice(start, start + chunk)
            steps = self._odd_steps(x[rows] @ self._double_nodes_t)[:, None, :] * _SIGN_COLUMN
            steps += 2.0  # (b, 2, nodes): 4 S, then 4 (1 - S) of every node
            b = steps.shape[0]
            prob = steps[:, :, :m].reshape(b, -1)
            for columns in self._spans:  # 4**level P(x -> node), level by level
                prob = (steps[:, :, columns] * prob[:, None, :]).reshape(b, -1)
            out[rows] = prob @ self._scaled_leaves_t.T
            counts[rows] = np.count_nonzero(prob, axis=1)
        return out, counts

    def forward_batch_conditional(self, x: FloatArray) -> tuple[FloatArray, IntArray]:
        """:meth:`forward_batch` over the reachable nodes only (:meth:`route`)."""
        leaf = self.route(x)[-1]
        return self.outputs(leaf, x.shape[0]), np.bincount(leaf.sample, minlength=x.shape[0])

    def _leaf_matrix(self, leaf: RoutedLevel, batch: int) -> FloatArray:
        """``P(x_b -> l)`` as a dense ``(B, m 2**d)`` matrix, leaves in position order."""
        matrix = np.zeros((batch, self._leaves.shape[0]))
        matrix[leaf.sample, leaf.position] = leaf.prob
        return matrix

    def outputs(self, leaf: RoutedLevel, batch: int) -> FloatArray:
        """Summed outputs ``(B, k)`` from the leaf level of :meth:`route`."""
        out: FloatArray = self._leaf_matrix(leaf, batch) @ self._leaves
        return out

    def gradients(
        self, x: FloatArray, levels: list[RoutedLevel], grad_out: FloatArray
    ) -> tuple[FloatArray, FloatArray]:
        """Algorithm 2: ``d loss / d node_weights`` and ``d loss / d leaf_weights``, summed.

        ``levels`` is :meth:`route` of ``x`` ``(B, p)``; ``grad_out`` ``(B, k)`` is
        ``d loss / d output`` per sample.  Each reachable node gets
        ``V(n) = sum_l P(n -> l) <grad_out, o_l>`` bottom-up; a fractional node's
        ``d loss / d <w, x> = P(x -> n) S'(<w, x>) (V(left) - V(right))`` (zero at a
        hard node, where ``S' = 0``), and a level's node gradient is one product of
        those with the contexts.
        """
        m, n_int, p = self.node_weights.shape
        batch = x.shape[0]
        leaf = levels[-1]
        grad_leaves = np.empty_like(self._leaves)
        grad_leaves[self._orders[-1]] = self._leaf_matrix(leaf, batch).T @ grad_out
        leaf_rows = self._leaves.take(leaf.position, 0)
        value = np.einsum("ij,ij->i", leaf_rows, grad_out.take(leaf.sample, 0))  # V(leaf)
        grad_w = np.empty((m, n_int, p))
        child = leaf
        for level in range(self.depth - 1, -1, -1):
            node = levels[level]
            n_entries = node.position.size
            signed = np.where(child.side, -value, value)
            diff = np.bincount(child.parent, signed, minlength=n_entries)  # V(L) - V(R)
            value = np.bincount(child.parent, child.branch * value, minlength=n_entries)
            slope = (1.5 - 6.0 * node.u * node.u) * (1.0 / self.gamma)  # S'; 0 when hard
            d_z = np.zeros((batch, m << level))
            d_z[node.sample, node.position] = node.prob * slope * diff
            block = np.empty((m << level, p))
            block[self._orders[level]] = d_z.T @ x  # back to column order
            grad_w[:, (1 << level) - 1 : (2 << level) - 1] = block.reshape(m, 1 << level, p)
            child = node
        return grad_w, grad_leaves.reshape(self.leaf_weights.shape)
