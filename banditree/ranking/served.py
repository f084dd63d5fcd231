"""Scoring on a served snapshot: per-candidate work done once, the crosses never built.

:meth:`RankingLearner.scores <banditree.ranking.learner.RankingLearner.scores>` builds,
for every request, each candidate's standardised row, the context x candidate crosses
``phi`` and the joint vector the tree routes.  On a snapshot that no longer learns (the
one a service serves, or a model between two learns) most of that is fixed per
candidate, and a catalogue's candidates recur from call to call.  :class:`ServedScorer`
splits each term into a context part (once per request) and a candidate part (once per
candidate and snapshot, cached by candidate id and features, and once per candidate set
sent again as it was):

* the ridge term ``w . phi(c, a) = w_c . c + w_a . a + a . (W c) + b``, with ``W`` the
  cross weights as a ``(da, dc)`` matrix, is ``[a, 1] . [W c + w_a, w_c . c + b]``;
* each tree node's activation ``v_k . [c; a] + b_k`` is ``[a, 1] . [v_k^a, v_k^c . c +
  b_k]``;

so one context matrix ``M(c)`` of shape ``(da + 1, 1 + nodes + 1)``, an affine map of
``c`` worked out by one matrix-vector product per request, gives every candidate's ridge
term and node activations in one product ``[a, 1] M(c)``.  Its last column is 1 for
every candidate, so that the leaf comes from the signs ``s`` of the activations as one
more product: the path scores ``q = S s`` (the reached leaf is the one with ``q_l = h``,
ties going left as in the tree's own routing) are ``[2 S, -S 1] . [h, 1]`` with ``h``
the activations above 0, instead of a walk of one gather per level.  The products are
taken transposed (``M(c)^T [a, 1]^T``), so that each column's values over the
candidates lie together for the comparisons after them.  The tree's per-id weight
``plays / (plays + id_ramp)`` is fixed per snapshot.

A cached candidate row is ``[a (da), 1, id weight]``, kept in one table per snapshot so
that the rows of a request are one ``take``.  The products are ``ndarray.dot`` (BLAS
straight away: numpy's ``@`` costs a few microseconds more per call on such small
arrays).  The scores equal the learner's up to the rounding of a different summation
order (about 1e-16 relative), so an event id gets the same decision (tested against the
learner's).

With the compiled kernel (:mod:`banditree.kernel`), :meth:`ServedScorer.decide` does a
request's arithmetic in one call: the context's standardisation, ``M(c)``, every
candidate's ridge term and tree walk (the activations of the nodes on its path only),
the explorer's pmf and the event id's draw.  :meth:`scores` and
:meth:`RankingLearner.pick <banditree.ranking.learner.RankingLearner.pick>` stay the
numpy reference (``BANDITREE_KERNEL=reference``) that ``tests/kernel/test_rank.py``
compares it with.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from itertools import repeat
from types import ModuleType
from typing import Any

import numpy as np
import orjson

from banditree.core import FloatArray
from banditree.features import FeatureEncoder
from banditree.kernel import rank_decide
from banditree.learners.gradient_bandit.kernel_calls import explorer_setting
from banditree.models.dgt.spec import path_matrix
from banditree.ranking.learner import RankingLearner
from banditree.ranking.settings import id_buckets

#: bytes of cached candidate rows per snapshot, and again of cached candidate sets (each
#: cleared when full): a bound per model
CACHE_BYTES = 1 << 20


class ServedScorer:
    """The scores of a fixed :class:`RankingLearner` and its (published) encoders."""

    def __init__(
        self,
        core: RankingLearner,
        context_encoder: FeatureEncoder | None,
        action_encoder: FeatureEncoder | None,
        kernel: ModuleType | None = None,
    ) -> None:
        self.context_encoder, self.action_encoder = context_encoder, action_encoder
        #: the compiled kernel :meth:`decide` calls (None: the numpy reference decides)
        self.kernel = kernel
        self._core = core
        dc, da = core._dc, core._da
        self._dc, self._da, self._clip = dc, da, core.config.context_clip
        self._c_mean, self._c_scale = core._context_stats.mean, core._context_stats.scale()
        self._a_mean, self._a_scale = core._action_stats.mean, core._action_stats.scale()
        frozen = core._frozen
        if frozen is not None and frozen.linear is not None:
            raise ValueError("a ranking tree has no linear leaves")
        self._tree = frozen is not None
        self._context_map(core)
        self._kernel_tree: tuple[int, FloatArray | None] = (0, None)
        if frozen is not None:
            self._theta = frozen.theta[:, 0]
            self._kernel_tree = (frozen.height, np.ascontiguousarray(self._theta))
            paths = path_matrix(frozen.height)  # (leaves, nodes): q = S sign
            self._paths = np.hstack((2.0 * paths, -paths.sum(axis=1, keepdims=True)))  # . [h, 1]
        plays = core._id_plays if core._id_plays.size else None
        self._plays, self._ramp = plays, core.config.id_ramp
        # a cached row: a | 1 | id weight, at the table row its key maps to
        self._width = da + 2
        self._max_rows = max(1, CACHE_BYTES // (8 * self._width))
        self._rows: dict[tuple[str, bytes] | None, int] = {}  # None (not JSON): never kept
        # whole candidate sets seen before: (ids, JSON of the features) -> their rows
        self._sets: dict[tuple[tuple[str, ...], bytes], FloatArray] = {}
        self._set_rows = 0
        self._table = np.empty((16, self._width))

    def _context_map(self, core: RankingLearner) -> None:
        """``M(c) = (c . G + M0)`` reshaped to ``(da + 1, cols)``: column 0 the ridge term's
        ``[W c + w_a, w_c . c + b]``, then each node's ``[v^a, v^c . c + b]``, then
        ``[0, 1]`` (a constant 1: the path scores' offset)."""
        dc, da = self._dc, self._da
        w = core._ridge.weights[0]
        frozen = core._frozen
        nodes = 0 if frozen is None else frozen.weights.shape[0]
        cols = 1 + (nodes + 1 if frozen is not None else 0)
        g = np.zeros((dc, da + 1, cols))
        m0 = np.zeros((da + 1, cols))
        if core.config.crosses and dc and da:
            g[:, :da, 0] = w[dc + da : -1].reshape(da, dc).T
        g[:, da, 0] = w[:dc]
        m0[:da, 0], m0[da, 0] = w[dc : dc + da], w[-1]
        if frozen is not None:
            g[:, da, 1 : 1 + nodes] = frozen.weights[:, :dc].T
            m0[:da, 1 : 1 + nodes] = frozen.weights[:, dc : dc + da].T
            m0[da, 1 : 1 + nodes] = frozen.weights[:, -1]
            m0[da, -1] = 1.0
        self._g = g.reshape(dc, m0.size)  # (0, cols) for a context of no features
        self._m0 = m0.reshape(-1)
        self._m_shape = m0.shape
        # the kernel's G: its columns that hold a weight (a node's candidate part is the
        # same for every context: most columns are 0)
        held = np.flatnonzero((self._g != 0.0).any(axis=0))
        self._kernel_map = (np.ascontiguousarray(self._g[:, held]), held, self._m0)

    # -- the context part ------------------------------------------------------------
    def _encoded(self, context: Mapping[str, Any]) -> FloatArray:
        """The context encoded by the published encoder, not yet standardised."""
        if self.context_encoder is None:
            return np.zeros(0)
        return self.context_encoder.encode(context, True, "context")

    def _context(self, context: Mapping[str, Any]) -> FloatArray:
        c = self._encoded(context)
        if not self._dc:
            return c
        # np.clip's own wrappers cost more than the two ufuncs (the same values)
        out: FloatArray = np.minimum(
            np.maximum((c - self._c_mean) / self._c_scale, -self._clip), self._clip
        )
        return out

    # -- the candidate part ----------------------------------------------------------
    def _rows_of(
        self, ids: Sequence[str], features: Sequence[Mapping[str, Any]], which: list[int]
    ) -> FloatArray:
        """The rows of the candidates at the indices ``which``, worked out together."""
        n, da = len(which), self._da
        rows = np.empty((n, self._width))
        enc = self.action_encoder
        if enc is not None:
            a = np.stack([enc.encode(features[i], True, f"actions[{i}].features") for i in which])
            if da:
                a = np.minimum(
                    np.maximum((a - self._a_mean) / self._a_scale, -self._clip), self._clip
                )
            rows[:, :da] = a
        rows[:, da] = 1.0
        if self._plays is None:
            rows[:, -1] = 1.0
        else:
            plays = self._plays[id_buckets([ids[i] for i in which])]
            rows[:, -1] = plays / (plays + self._ramp)
        return rows

    def _rows_of_set(self, ids: Sequence[str], features: Sequence[Mapping[str, Any]]) -> FloatArray:
        """The rows of a candidate set: one lookup for a set sent before as it is (a
        catalogue, or a page of it, sent on every call), else :meth:`_candidates`.  The
        sets kept hold at most as many rows as the candidate table (then start over)."""
        try:
            key = (tuple(ids), orjson.dumps(features))
        except TypeError:  # not JSON: the candidates one by one
            return self._candidates(ids, features)
        rows = self._sets.get(key)
        if rows is None:
            rows = self._candidates(ids, features)
            if len(rows) > self._max_rows:
                return rows
            rows.setflags(write=False)  # shared by the calls that send this set
            if self._set_rows + len(rows) > self._max_rows:
                self._sets.clear()
                self._set_rows = 0
            self._sets[key] = rows
            self._set_rows += len(rows)
        return rows

    def _candidates(self, ids: Sequence[str], features: Sequence[Mapping[str, Any]]) -> FloatArray:
        """Every candidate's row: the cached ones from the table, new ones worked out
        (and kept, but for features that are not JSON: a library caller's object)."""
        cache = self._rows
        try:  # C-level maps: a request whose rows are all cached costs a few calls
            keys: list[tuple[str, bytes] | None] = list(
                zip(ids, map(orjson.dumps, features), strict=True)
            )
        except TypeError:
            keys = [_key(action_id, f) for action_id, f in zip(ids, features, strict=True)]
        at = list(map(cache.get, keys, repeat(-1)))  # a key None: -1, never kept
        if -1 not in at:
            return self._table.take(at, axis=0)
        missed = [i for i, row in enumerate(at) if row < 0]
        fresh = self._rows_of(ids, features, missed)
        if len(missed) == len(ids):
            out = fresh
        else:  # taken before new rows are kept (which may clear the table)
            out = self._table.take(at, axis=0)  # the missed rows' -1: overwritten
            out[missed] = fresh
        self._keep([keys[i] for i in missed], fresh)
        return out

    def _keep(self, keys: list[tuple[str, bytes] | None], rows: FloatArray) -> None:
        """Keep ``rows`` (new candidates: their keys are not in the cache) under ``keys``
        (None: not kept) as one block of the table, which grows by doubling up to its
        bound and starts over when full."""
        kept = [k for k, key in enumerate(keys) if key is not None]
        n = len(kept)
        if not n or n > self._max_rows:
            return
        cache = self._rows
        if len(cache) + n > self._max_rows:
            cache.clear()
        start = len(cache)  # rows are only added, or all cleared: the next free row
        size = self._table.shape[0]
        if start + n > size:
            grown = np.empty((min(max(2 * size, start + n), self._max_rows), self._width))
            grown[:start] = self._table[:start]
            self._table = grown
        self._table[start : start + n] = rows[kept]
        cache.update(zip([keys[k] for k in kept], range(start, start + n), strict=True))

    # -- scores ----------------------------------------------------------------------
    def scores(
        self, context: Mapping[str, Any], ids: Sequence[str], features: Sequence[Mapping[str, Any]]
    ) -> FloatArray:
        """The predicted reward of each candidate (``ids``, ``features``) for ``context``."""
        c = self._context(context)
        rows = self._rows_of_set(ids, features)
        da = self._da
        m = (c.dot(self._g) + self._m0).reshape(self._m_shape)
        z = m.T.dot(rows[:, : da + 1].T)  # (columns, n): each column's values contiguous
        out: FloatArray = z[0]
        if not self._tree:
            return out
        # the one leaf whose path score is h (the method: np.argmax adds a Python wrapper)
        leaves = self._paths.dot(z[1:] > 0.0).argmax(axis=0)
        return out + rows[:, -1] * self._theta[leaves]

    # -- a decision in one kernel call -------------------------------------------------
    def decide(
        self,
        context: Mapping[str, Any],
        ids: Sequence[str],
        features: Sequence[Mapping[str, Any]],
        event_id: str,
        uniform: float | None = None,
    ) -> tuple[int, list[float], int]:
        """``(chosen, pmf, greedy)`` of the candidates (``ids``, ``features``) for
        ``context``, by the compiled kernel: :meth:`scores` then the learner's
        :meth:`~banditree.ranking.learner.RankingLearner.pick`, the same numbers (within
        rounding) and the same decision for the same event id (or ``uniform``)."""
        assert self.kernel is not None
        core = self._core
        c = self._encoded(context)
        rows = self._rows_of_set(ids, features)
        setting = explorer_setting(core._explorer, core.n_learned)
        if setting is None:  # an explorer the kernel does not compute: numpy's pick
            return core.pick(self.scores(context, ids, features), event_id, uniform=uniform)
        dc = self._dc
        draw = (core.config.seed, event_id) if uniform is None else uniform
        chosen, greedy, pmf = rank_decide(
            self.kernel, (c, self._c_mean[:dc], self._c_scale[:dc]), self._clip, rows,
            self._kernel_map, self._kernel_tree, setting[0], setting[1], draw,
        )  # fmt: skip
        core.n_decisions += 1
        return chosen, pmf, greedy


def _key(action_id: str, features: Mapping[str, Any]) -> tuple[str, bytes] | None:
    """The cache key of a candidate; None for features that are not JSON (not cached)."""
    try:
        return action_id, orjson.dumps(features)
    except TypeError:
        return None
