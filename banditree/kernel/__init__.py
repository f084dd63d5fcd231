"""The compiled kernel: a tick's decisions and a learning window's gradients, one call each.

``banditree.kernel._native`` is one C file against the CPython API
(``docs/decisions/native-kernel.md``), built by the package's own build.  The numpy
code (``banditree.models``, ``banditree.explore``, ``banditree.learners``) stays the
specification and the tests' oracle (``tests/kernel``).

Which path runs is chosen once, at import, by the environment variable
``BANDITREE_KERNEL``: ``native`` (the default) or ``reference`` (the numpy path, on
purpose).  :data:`ACTIVE` says which one runs: ``"native"``, ``"reference"``, or
``"unavailable"`` when the native path was asked for and the compiled module does not
import; then :func:`native` raises :class:`KernelUnavailable` (every learner calls it
when it is built), so a missing build is never a silent fallback.
"""

from __future__ import annotations

import os
from types import ModuleType
from typing import Final, Literal

import numpy as np

from banditree.core.arrays import FloatArray, IntArray

__all__ = [
    "ACTIVE",
    "ENV",
    "IMPORT_ERROR",
    "KernelUnavailable",
    "boosted_decide",
    "boosted_leaf_sums",
    "boosted_route",
    "boosted_value",
    "boosted_values",
    "decide_rows",
    "decode_stored",
    "event_uniform_rows",
    "hinge_decide",
    "native",
    "rank_decide",
    "tel_decide",
    "window_gradients",
]

#: the environment variable that selects the path
ENV: Final = "BANDITREE_KERNEL"
#: explorer codes of :func:`decide_rows` (``None``: no explorer, regression)
EXPLORERS: Final = {"epsilon_greedy": 0, "softmax": 1, "squarecb": 2, "fastcb": 3}
#: forest aggregates of :func:`decide_rows`: one tree, the trees' mean, or their votes
AGGREGATES: Final = {"single": 0, "average": 1, "vote": 2}


class KernelUnavailable(RuntimeError):
    """The native kernel was asked for (``BANDITREE_KERNEL`` unset or ``native``) and
    does not import."""


def _load() -> tuple[Literal["native", "reference", "unavailable"], ModuleType | None, str | None]:
    wanted = os.environ.get(ENV, "native").strip().lower() or "native"
    if wanted == "reference":
        return "reference", None, None
    if wanted != "native":
        return "unavailable", None, f"{ENV} must be 'native' or 'reference', got {wanted!r}"
    try:
        import banditree.kernel._native as _native
    except ImportError as err:
        return "unavailable", None, f"the compiled kernel does not import ({err})"
    return "native", _native, None


ACTIVE, _MODULE, IMPORT_ERROR = _load()


def native() -> ModuleType | None:
    """The compiled module, or None when ``BANDITREE_KERNEL=reference`` asks for numpy.

    Raises
    ------
    KernelUnavailable
        When the native kernel was asked for and does not import.
    """
    if ACTIVE == "unavailable":
        raise KernelUnavailable(
            f"{IMPORT_ERROR}: build it with `pip install -e .` (`make install`), or set "
            f"{ENV}=reference to run the numpy reference on purpose"
        )
    return _MODULE


def decide_rows(
    module: ModuleType,
    x: FloatArray,
    mean: FloatArray,
    inv_scale: FloatArray,
    weights: FloatArray,
    theta: FloatArray,
    linear: FloatArray | None,
    uniforms: FloatArray,
    *,
    clip: float | None,
    aggregate: str,
    sigmoid: bool,
    explorer: str | None,
    parameter: float,
) -> tuple[IntArray, FloatArray, IntArray, IntArray, FloatArray, FloatArray]:
    """A tick of decisions: contexts ``x`` ``(B, d)`` through ``T`` frozen trees.

    Standardise (``(x - mean) * inv_scale``) and clip to ``[-clip, clip]``; route each
    tree (``weights`` ``(T, 2**h - 1, d + 1)``, the bias last) to its leaf's row of
    ``theta`` ``(T, 2**h, K)`` plus ``linear`` ``(T, K, d)`` applied to the context;
    aggregate the trees; explore on the scores (the outputs, their sigmoid, or the
    votes) with ``parameter`` (the explorer's epsilon, temperature or gamma at the
    learner's round) and sample with ``uniforms`` ``(B,)``.

    Returns
    -------
    action, propensity, greedy, leaf, output, scores
        ``(B,)`` each but ``output`` and ``scores`` ``(B, K)``; ``leaf`` is -1 for a
        forest; without an explorer the action is the greedy one at probability 1.
    """
    b, k = x.shape[0], theta.shape[-1]
    action = np.empty(b, dtype=np.int64)
    propensity = np.empty(b)
    greedy = np.empty(b, dtype=np.int64)
    leaf = np.empty(b, dtype=np.int64)
    output = np.empty((b, k))
    scores = np.empty((b, k))
    module.decide(
        x, mean, inv_scale, 0.0 if clip is None else float(clip), weights, theta, linear,
        AGGREGATES[aggregate], int(sigmoid), -1 if explorer is None else EXPLORERS[explorer],
        float(parameter), uniforms, action, propensity, greedy, leaf, output, scores,
    )  # fmt: skip
    return action, propensity, greedy, leaf, output, scores


def boosted_decide(
    module: ModuleType,
    x: FloatArray,
    trees: tuple[IntArray, FloatArray, FloatArray, FloatArray],
    linear: tuple[FloatArray, FloatArray, FloatArray],
    clip: float,
    online: FloatArray | None,
    errors: tuple[float, float],
    optimism: float,
    explorer: str | None,
    parameter: float,
    uniform: float,
) -> tuple[int, float, int, FloatArray, FloatArray]:
    """One decision of a boosted ensemble on (context, one-hot action), every action in
    one call (:meth:`banditree.models.boosted.frozen.FrozenBoostedEnsemble.action_scores`
    and :class:`banditree.learners.boosted.BoostedBandit`'s ``act``).

    ``x`` ``(d,)`` finite; ``trees`` the complete trees of depth ``D``: ``features``
    ``(T, 2**D - 1)`` int64 in ``[0, d + K)``, ``thresholds`` of the same shape,
    ``values`` and ``uncertainty`` ``(T, 2**D)``; ``linear`` the base: ``offset``
    (``base_mean * base_scale``) and ``scale`` ``(d,)``, weights ``(K, d + 1)``, the
    standardised context clipped to ``[-clip, clip]``.  With ``online`` ``(K,)`` the
    ensemble's mean is blended with it, weighted by ``errors`` ``(e_online,
    e_ensemble)``: ``(e_online * mean + e_ensemble * online) / (e_online + e_ensemble)``
    when that sum is positive.  Scores are ``mean + optimism * sqrt(variance)``; without
    an explorer the action is their argmax at probability 1, else the explorer's pmf
    (``parameter`` at the learner's round) is sampled with ``uniform``.

    Returns
    -------
    action, propensity, greedy, mean, scores
        ``greedy`` is the argmax of ``mean`` ``(K,)``.
    """
    k = linear[2].shape[0]
    mean = np.empty(k)
    scores = np.empty(k)
    action, propensity, greedy = module.boosted_decide(
        x, *trees, *linear, float(clip), online, float(errors[0]), float(errors[1]),
        float(optimism), -1 if explorer is None else EXPLORERS[explorer], float(parameter),
        float(uniform), mean, scores,
    )  # fmt: skip
    return action, propensity, greedy, mean, scores


def boosted_value(
    module: ModuleType,
    x: FloatArray,
    trees: tuple[IntArray, FloatArray, FloatArray, FloatArray],
    linear: tuple[FloatArray, FloatArray, FloatArray],
    clip: float,
    action: int,
) -> float:
    """The predicted reward of ``action`` for ``x`` ``(d,)``: one walk per tree and the
    linear base (:meth:`~banditree.models.boosted.frozen.FrozenBoostedEnsemble.action_value`);
    the arrays as :func:`boosted_decide` takes them (the uncertainty unread)."""
    value: float = module.boosted_value(x, *trees[:3], *linear, float(clip), int(action))
    return value


def boosted_values(
    module: ModuleType,
    x: FloatArray,
    actions: IntArray,
    trees: tuple[IntArray, FloatArray, FloatArray, FloatArray],
    linear: tuple[FloatArray, FloatArray, FloatArray],
    clip: float,
) -> FloatArray:
    """:func:`boosted_value` of every row of ``x`` ``(B, d)`` and its action in ``actions``
    ``(B,)`` int64, by one call: ``(B,)``, each the same number as :func:`boosted_value`'s."""
    out = np.empty(x.shape[0])
    module.boosted_values(x, actions, *trees[:3], *linear, float(clip), out)
    return out


def boosted_route(
    module: ModuleType, inputs: FloatArray, features: IntArray, thresholds: FloatArray
) -> IntArray:
    """The flat leaf (``t * 2**D + j``) of every row of ``inputs`` ``(B, W)`` in every tree
    of ``features`` and ``thresholds`` ``(T, 2**D - 1)``, ``(B, T)``
    (:meth:`~banditree.models.boosted.frozen.FrozenBoostedEnsemble.route`)."""
    leaves = np.empty((inputs.shape[0], features.shape[0]), dtype=np.int64)
    module.boosted_route(inputs, features, thresholds, leaves)
    return leaves


def rank_decide(
    module: ModuleType,
    context: tuple[FloatArray, FloatArray, FloatArray],
    clip: float,
    rows: FloatArray,
    context_map: tuple[FloatArray, IntArray, FloatArray],
    tree: tuple[int, FloatArray | None],
    explorer: str,
    parameter: float,
    draw: tuple[int, str] | float,
    scores: FloatArray | None = None,
) -> tuple[int, int, list[float]]:
    """One ranking decision over ``n`` candidates
    (:meth:`banditree.ranking.served.ServedScorer.decide`), in one call.

    ``context`` is the encoded context ``c`` ``(dc,)`` with the statistics it is
    standardised by (``mean``, ``scale``), clipped to ``[-clip, clip]``; ``rows`` the
    candidates' cached rows ``(n, da + 2)``: ``[a, 1, id weight]``; ``context_map`` the
    served scorer's ``G`` ``(dc, (da + 1) cols)`` as its columns that hold a weight
    ``(dc, q)`` and their indices ``(q,)`` (int64, increasing), and ``M0``
    ``((da + 1) cols,)``, with ``cols`` 1 without a tree, else ``2**h + 1``: the context
    map is ``c G + M0``; ``tree`` ``(h, theta (2**h,))``, or
    ``(0, None)``.  The explorer's pmf (``parameter`` at the learner's round) is sampled
    with the uniform of ``draw``: ``(seed, event_id)`` hashes the event id as
    :func:`banditree.explore.event_uniforms` does, a float is the uniform itself.
    ``scores`` ``(n,)``, when given, receives the candidates' scores.

    Returns
    -------
    chosen, greedy, probabilities
        The sampled candidate, the argmax of the scores, the pmf as Python floats.
    """
    c, mean, scale = context
    if isinstance(draw, tuple):
        prefix, event_id, u = f"{draw[0]}:".encode(), draw[1], 0.0
    else:
        prefix, event_id, u = b"", None, float(draw)
    decided: tuple[int, int, list[float]] = module.rank_decide(
        c, mean, scale, float(clip), rows, *context_map, tree[0], tree[1], EXPLORERS[explorer],
        float(parameter), prefix, event_id, u, scores,
    )  # fmt: skip
    return decided


def boosted_leaf_sums(
    module: ModuleType, leaves: IntArray, targets: FloatArray, size: int
) -> tuple[FloatArray, FloatArray]:
    """``(count, squares)`` ``(size,)``: the rows of ``leaves`` ``(B, T)`` (flat leaves in
    ``[0, size)``) reaching each leaf, and the squared deviations of their ``targets``
    ``(B,)`` from its mean (:func:`~banditree.models.boosted.stats.leaf_uncertainty`'s
    bincounts of the ``reward`` target, the same numbers)."""
    count, squares = np.empty(size), np.empty(size)
    module.boosted_leaf_sums(leaves, targets, count, squares)
    return count, squares


#: :func:`decode_stored`'s statuses: learn the entry (its columns are written), nothing
#: to learn (another model's decision, or an expiry without a default loss), or the
#: Python decoding reads it (every other form; it names what is wrong)
STORED_LEARN: Final = 0
STORED_NONE: Final = 1
STORED_PYTHON: Final = 2


def decode_stored(
    module: ModuleType,
    decisions: list[str],
    feedbacks: list[str | None],
    uid: bytes,
    default_loss: float | None,
    n_features: int,
) -> tuple[FloatArray, IntArray, FloatArray, FloatArray, IntArray]:
    """A chunk of log entries (the stored decisions' texts, the feedbacks' texts or None
    for an expiry) decoded by one kernel call into ``(rows (n, n_features), actions,
    propensity, loss, status)``: the columns ``learn_chunk`` takes, for the entries of
    status :data:`STORED_LEARN` (a binary stored decision of this ``uid`` with a plain
    loss, or an expiry with ``default_loss``).  ``_stored.h`` says which forms it
    reads; every other entry is :data:`STORED_PYTHON`."""
    n = len(decisions)
    rows = np.empty((n, n_features))
    actions = np.empty(n, dtype=np.int64)
    propensity, loss = np.empty(n), np.empty(n)
    status = np.empty(n, dtype=np.int64)
    module.decode_stored(
        decisions, feedbacks, uid, default_loss, rows, actions, propensity, loss, status
    )
    return rows, actions, propensity, loss, status


def event_uniform_rows(module: ModuleType, seed: int, event_ids: list[str]) -> FloatArray:
    """:func:`banditree.explore.event_uniform_rows` (the same bits): ``(B, 2)`` uniforms of
    ``blake2b(f"{seed}:{event_id}", digest_size=16)``, hashed in C."""
    out = np.empty((len(event_ids), 2))
    module.event_uniforms(f"{seed}:".encode(), event_ids, out)
    return out


def window_gradients(
    module: ModuleType,
    x: FloatArray,
    actions: IntArray,
    propensity: FloatArray,
    loss: FloatArray,
    weights: FloatArray,
    theta: FloatArray,
    bias: FloatArray | None,
    linear: FloatArray | None,
    *,
    sigmoid: bool,
    cap: float | None,
    aware: bool,
    graded: tuple[bool, bool],
) -> dict[str, FloatArray]:
    """Algorithm 2 summed over a window of standardised contexts ``x`` ``(B, d)``, each
    with the eq. 8 gradient of its played action (``actions``, ``propensity``, ``loss``).

    A single-layer tree (``weights`` ``(2**h - 1, d + 1)``, ``theta`` ``(2**h, K)``, the
    shared ``bias`` ``(K,)`` and ``linear`` term ``(K, d)`` optional); ``cap`` truncates
    the importance weight (``aware``: smoothly); ``graded``: whether ``bias`` and
    ``linear`` get gradients.  The keys of
    :func:`banditree.models.dgt.spec.dgt_gradients_batch`'s result, ``W0`` for the weights.
    """
    grads: dict[str, FloatArray] = {"theta": np.zeros(theta.shape)}
    if bias is not None and graded[0]:
        grads["bias"] = np.zeros(bias.shape)
    if linear is not None and graded[1]:
        grads["linear"] = np.zeros(linear.shape)
    grads["W0"] = np.zeros(weights.shape)
    module.window_gradients(
        x, actions, propensity, loss, weights, theta, bias, linear, int(sigmoid),
        0.0 if cap is None else float(cap), int(aware), grads["W0"], grads["theta"],
        grads.get("bias"), grads.get("linear"),
    )  # fmt: skip
    return grads


def tel_decide(
    module: ModuleType,
    x: FloatArray,
    mean: FloatArray,
    inv_scale: FloatArray,
    nodes: FloatArray,
    leaves: FloatArray,
    uniforms: FloatArray,
    *,
    clip: float | None,
    dense: bool,
    sigmoid: bool,
    explorer: str | None,
    parameter: float,
) -> tuple[IntArray, FloatArray, IntArray, FloatArray, IntArray]:
    """A tick of a Tree Ensemble Layer (:class:`~banditree.models.tel.frozen.FrozenTEL`):
    contexts ``x`` ``(B, d)`` standardised and clipped as :func:`decide_rows` does, the
    summed outputs of ``m`` soft trees, explored as there.

    ``nodes`` ``(m, 2**h - 1, d)`` are the node weights divided by gamma, breadth-first
    in each tree; ``leaves`` ``(m, 2**h, K)`` the leaf weights; ``dense`` picks
    :attr:`FrozenTEL.dense`'s arithmetic (the numbers of the reference's pass).

    Returns
    -------
    action, propensity, greedy, output, reached
        ``(B,)`` each but ``output`` ``(B, K)``; ``reached`` the leaves each context
        reached, all trees (the reference's ``reachable_leaves_total``).
    """
    b, k = x.shape[0], leaves.shape[-1]
    action, greedy, reached = (np.empty(b, dtype=np.int64) for _ in range(3))
    propensity, output = np.empty(b), np.empty((b, k))
    module.tel_decide(
        x, mean, inv_scale, 0.0 if clip is None else float(clip), nodes, leaves, int(dense),
        int(sigmoid), -1 if explorer is None else EXPLORERS[explorer], float(parameter),
        uniforms, action, propensity, greedy, output, reached,
    )  # fmt: skip
    return action, propensity, greedy, output, reached


def hinge_decide(
    module: ModuleType,
    x: FloatArray,
    mean: FloatArray,
    inv_scale: FloatArray,
    forest: tuple[FloatArray | None, IntArray, FloatArray, FloatArray, FloatArray],
    uniforms: FloatArray,
    *,
    clip: float | None,
    ferns: bool,
    sigmoid: bool,
    explorer: str | None,
    parameter: float,
) -> tuple[IntArray, FloatArray, IntArray, IntArray, FloatArray]:
    """A tick of a random hinge forest or fern ensemble
    (:meth:`~banditree.models.hinge.frozen.FrozenHingeForest.forward_batch_leaves`):
    contexts ``x`` ``(B, d)`` standardised and clipped as :func:`decide_rows` does, the
    forest's outputs, explored as there.

    ``forest`` is ``(pool, features, thresholds, leaf_rows, bias)``: the pool ``(P, d)``
    or None, the feature indices ``(T, N)`` int64 in ``[0, P or d)`` and thresholds of
    the same shape (``N = 2**D - 1``, or ``D`` for ferns), the leaf rows ``(T 2**D, K)``
    (divided by ``T`` for the mean) and the bias ``(K,)``.

    Returns
    -------
    action, propensity, greedy, leaf, output
        ``(B,)`` each but ``output`` ``(B, K)``; ``leaf`` the reached leaf of a single
        tree, -1 for a forest.
    """
    b, k = x.shape[0], forest[4].shape[0]
    action, greedy, leaf = (np.empty(b, dtype=np.int64) for _ in range(3))
    propensity, output = np.empty(b), np.empty((b, k))
    module.hinge_decide(
        x, mean, inv_scale, 0.0 if clip is None else float(clip), *forest, int(ferns),
        int(sigmoid), -1 if explorer is None else EXPLORERS[explorer], float(parameter),
        uniforms, action, propensity, greedy, leaf, output,
    )  # fmt: skip
    return action, propensity, greedy, leaf, output
