"""Scoring on a served snapshot: per-candidate work done once, the crosses never built.

:meth:`RankingLearner.scores <banditree.ranking.learner.RankingLearner.scores>` builds,
for every request, each candidate's standardised row, the context x candidate crosses
``phi`` and the joint vector the tree routes.  On a snapshot that no longer learns (the
one a service serves, or a model between two learns) most of that is fixed per
candidate, and a catalogue's candidates recur from call to call.  :class:`ServedScorer`
splits each term into a context part (once per request) and a candidate part (once per
candidate and snapshot, cached by candidate id and features):

* the ridge term ``w . phi(c, a) = w_c . c + w_a . a + a . (W c) + b``, with ``W`` the
  cross weights as a ``(da, dc)`` matrix: one matrix-vector product per request instead
  of ``n * dc * da`` crosses;
* each tree node's activation ``v_k . [c; a] + b_k = (v_k^c . c + b_k) + v_k^a . a``,
  and the leaf reached from the signs of all of them at once (the path scores
  ``q = S sign(a)``: the reached leaf is the one with ``q_l = h``, ties going left as
  in the tree's own routing) instead of a walk of one gather per level;
* the tree's per-id weight ``plays / (plays + id_ramp)``.

A cached candidate row is ``[a (da), v^a . a (nodes), w_a . a, id weight]``.  The scores
equal the learner's up to the rounding of a different summation order (about 1e-16
relative), so an event id gets the same decision (tested against the learner's).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import orjson

from banditree.core import FloatArray
from banditree.features import FeatureEncoder
from banditree.models.dgt.spec import path_matrix
from banditree.ranking.learner import RankingLearner
from banditree.ranking.settings import id_buckets

#: bytes of cached candidate rows per snapshot (cleared when full): a bound per model
CACHE_BYTES = 1 << 20


class ServedScorer:
    """The scores of a fixed :class:`RankingLearner` and its (published) encoders."""

    def __init__(
        self,
        core: RankingLearner,
        context_encoder: FeatureEncoder | None,
        action_encoder: FeatureEncoder | None,
    ) -> None:
        self.context_encoder, self.action_encoder = context_encoder, action_encoder
        dc, da = core._dc, core._da
        self._dc, self._da, self._clip = dc, da, core.config.context_clip
        self._c_mean, self._c_scale = core._context_stats.mean, core._context_stats.scale()
        self._a_mean, self._a_scale = core._action_stats.mean, core._action_stats.scale()
        w = core._ridge.weights[0]
        self._w_c, self._w_a, self._b = w[:dc], w[dc : dc + da], float(w[-1])
        crosses = core.config.crosses and dc and da
        self._cross = w[dc + da : -1].reshape(da, dc) if crosses else None
        frozen = core._frozen
        if frozen is not None and frozen.linear is not None:
            raise ValueError("a ranking tree has no linear leaves")
        self._tree = frozen is not None
        n_nodes = 0 if frozen is None else frozen.weights.shape[0]
        if frozen is not None:
            self._node_c = frozen.weights[:, :dc]
            self._node_a = frozen.weights[:, dc : dc + da]
            self._node_b = frozen.weights[:, -1]
            self._theta = frozen.theta[:, 0]
            self._paths = path_matrix(frozen.height).T  # (nodes, leaves)
        self._plays = core._id_plays if core._id_plays.size else None
        self._ramp = core.config.id_ramp
        # column layout of a cached row: a | node activations | w_a . a | id weight
        self._nodes = slice(da, da + n_nodes)
        self._width = da + n_nodes + 2
        self._max_rows = max(1, CACHE_BYTES // (8 * self._width))
        self._rows: dict[tuple[str, bytes], FloatArray] = {}

    # -- the context part ------------------------------------------------------------
    def _context(self, context: Mapping[str, Any]) -> FloatArray:
        if self.context_encoder is None:
            return np.zeros(0)
        c = self.context_encoder.encode(context, True, "context")
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
        enc = self.action_encoder
        if enc is None:
            a = np.zeros((n, 0))
        else:
            a = np.stack([enc.encode(features[i], True, f"actions[{i}].features") for i in which])
            if da:
                a = np.minimum(
                    np.maximum((a - self._a_mean) / self._a_scale, -self._clip), self._clip
                )
        rows = np.empty((n, self._width))
        rows[:, :da] = a
        if self._tree:
            rows[:, self._nodes] = a @ self._node_a.T
        rows[:, -2] = a @ self._w_a
        if self._plays is None:
            rows[:, -1] = 1.0
        else:
            plays = self._plays[id_buckets([ids[i] for i in which])]
            rows[:, -1] = plays / (plays + self._ramp)
        return rows

    def _candidates(self, ids: Sequence[str], features: Sequence[Mapping[str, Any]]) -> FloatArray:
        cache = self._rows
        out = np.empty((len(ids), self._width))
        missed: list[int] = []
        keys: list[tuple[str, bytes] | None] = []
        for i, (action_id, f) in enumerate(zip(ids, features, strict=True)):
            try:
                key: tuple[str, bytes] | None = (action_id, orjson.dumps(f))
            except TypeError:  # not JSON (a library caller's object): encoded, not cached
                key = None
            row = cache.get(key) if key is not None else None
            if row is None:
                missed.append(i)
                keys.append(key)
            else:
                out[i] = row
        if missed:  # new candidates: encoded one by one, the rest as one block
            fresh = self._rows_of(ids, features, missed)
            out[missed] = fresh
            for key, row in zip(keys, fresh, strict=True):
                if key is not None:
                    if len(cache) >= self._max_rows:
                        cache.clear()
                    cache[key] = row
        return out

    # -- scores ----------------------------------------------------------------------
    def scores(
        self, context: Mapping[str, Any], ids: Sequence[str], features: Sequence[Mapping[str, Any]]
    ) -> FloatArray:
        """The predicted reward of each candidate (``ids``, ``features``) for ``context``."""
        c = self._context(context)
        rows = self._candidates(ids, features)
        da = self._da
        linear_c = float(self._w_c @ c) + self._b
        out: FloatArray = rows[:, -2] + linear_c
        if self._cross is not None:
            out += rows[:, :da] @ (self._cross @ c)
        if not self._tree:
            return out
        activations = rows[:, self._nodes] + (self._node_c @ c + self._node_b)
        signs = np.where(activations > 0.0, 1.0, -1.0)
        leaves = (signs @ self._paths).argmax(axis=1)  # the one path scoring h (method:
        # np.argmax adds a Python wrapper per call)
        out += rows[:, -1] * self._theta[leaves]
        return out
