"""What a :class:`GradientBandit` hands the compiled kernel (:mod:`banditree.kernel`).

Each function returns None where the kernel does not cover the learner's setting (a
model family, an explorer or an estimator the kernel does not compute): the caller
then runs the numpy path, which is the specification for every setting.  Covered:
decisions of the DGT tree and forest (any height, the linear term, vote or average),
of the TEL and of the hinge forest or ferns (:mod:`.kernel_forms`) under the four
explorers, with the event ids' uniforms; the gradients of a
single-layer DGT tree under classification feedback (eq. 8) without a gradient clip.
RMSprop's steps (:mod:`banditree.learners.optim`), the ridge's rounds
(:mod:`banditree.learners.ridge`) and the input statistics
(:mod:`banditree.learners.standardize`) take the kernel themselves, for every model.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from operator import attrgetter
from types import ModuleType
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np

from banditree.core.arrays import FloatArray, IntArray
from banditree.core.columns import DecisionColumns
from banditree.core.records import Decision, Feedback
from banditree.estimators import ClassificationEstimator
from banditree.explore import EpsilonGreedy, Explorer, FastCB, Softmax, SquareCB
from banditree.kernel import decide_rows, event_uniform_rows, window_gradients
from banditree.learners.batch_decisions import context_rows
from banditree.learners.gradient_bandit.kernel_forms import Tick, form_tick, is_form
from banditree.models.dgt.forest_spec import DGTForestSpec
from banditree.models.dgt.spec import DGTSpec
from banditree.models.spec import BatchOutput, Params

if TYPE_CHECKING:
    from banditree.learners.gradient_bandit.base import GradientBase, Snapshot


def use_reference(learner: GradientBase) -> None:
    """Run ``learner`` on the numpy reference from now on (decisions, window gradients,
    RMSprop and the ridge), as ``BANDITREE_KERNEL=reference`` runs every learner: the
    kernel's tests and ``benchmarks/speed/kernel_speed.py`` compare both paths in one process."""
    learner._native = False
    learner._fold_inputs()
    learner._standardizer.kernel = None
    learner._optimizer.kernel = None
    if learner._ridge is not None:
        learner._ridge.kernel = None
    if learner._challenger is not None:
        learner._challenger.challenger.kernel = None


def explorer_setting(explorer: Explorer, t: int) -> tuple[str, float] | None:
    """``(name, parameter at round t)`` of an explorer the kernel computes, else None."""
    kind = type(explorer)
    if kind is EpsilonGreedy:
        return "epsilon_greedy", cast(EpsilonGreedy, explorer).epsilon_at(t)
    if kind is Softmax:
        return "softmax", cast(Softmax, explorer).temperature_at(t)
    if kind is FastCB:
        return "fastcb", cast(FastCB, explorer).gamma_at(t)
    if kind is SquareCB:
        return "squarecb", cast(SquareCB, explorer).gamma_at(t)
    return None


class _Stacked(Protocol):
    """A frozen tree or forest: its arrays stacked for the kernel."""

    stacked: tuple


def _trees(learner: GradientBase, frozen: object) -> tuple[str, tuple] | None:
    model = learner.model
    if type(model) is DGTSpec:
        return "single", cast(_Stacked, frozen).stacked
    if type(model) is DGTForestSpec:
        aggregate = model.aggregate if model.n_outputs > 1 else "average"
        return aggregate, cast(_Stacked, frozen).stacked
    return None


def _plan(
    learner: GradientBase, snap: Snapshot
) -> tuple[tuple[str, tuple] | None, tuple[str, float] | None] | None:
    """``(trees, setting)`` where the kernel decides for ``learner``, else None: the DGT
    trees of :func:`_trees` (None for a TEL or hinge form, :mod:`.kernel_forms`) and the
    explorer's ``(name, parameter)`` (None for regression)."""
    trees = _trees(learner, snap.frozen)
    if trees is None and not is_form(learner.model):
        return None
    setting = None
    if learner.task == "classification":
        assert learner.explorer is not None
        setting = explorer_setting(learner.explorer, learner._explore_rounds)
        if setting is None:
            return None
    return trees, setting


def _tick(
    module: ModuleType,
    learner: GradientBase,
    plan: tuple[tuple[str, tuple] | None, tuple[str, float] | None],
    x: FloatArray,
    uniforms: FloatArray,
    snap: Snapshot,
) -> Tick:
    """The kernel's decisions of contexts ``x`` ``(B, d)`` with the event ids'
    ``uniforms`` ``(B, 2)``, by one call (:func:`_plan`'s ``plan``)."""
    trees, setting = plan
    if trees is None:
        return form_tick(module, learner, x, uniforms, snap, setting)
    aggregate, (weights, theta, linear) = trees
    action, propensity, greedy, leaf, output, _ = decide_rows(
        module, x, snap.mean, snap.inv_scale, weights, theta, linear,
        np.ascontiguousarray(uniforms[:, 0]), clip=learner.context_clip, aggregate=aggregate,
        sigmoid=learner.reward_link == "sigmoid",
        explorer=None if setting is None else setting[0],
        parameter=0.0 if setting is None else setting[1],
    )  # fmt: skip
    return action, propensity, greedy, leaf if aggregate == "single" else None, output, {}


def decide_one(
    module: ModuleType, learner: GradientBase, x: FloatArray, event_id: str, snap: Snapshot
) -> tuple[int, float, int, int | None, FloatArray, float, dict[str, float]] | None:
    """``act``'s numbers for one context ``x`` ``(d,)`` by one kernel call: ``(action,
    propensity, greedy action, leaf or None, output (K,), the sign's uniform, extras)``,
    or None where the kernel does not cover the learner (the numpy path then decides)."""
    plan = _plan(learner, snap)
    if plan is None:
        return None
    uniforms = event_uniform_rows(module, learner.seed, [event_id])
    action, propensity, greedy, leaf, output, extras = _tick(
        module, learner, plan, x.reshape(1, -1), uniforms, snap
    )
    return (
        int(action[0]),
        float(propensity[0]),
        int(greedy[0]),
        None if leaf is None else int(leaf[0]),
        output[0],
        float(uniforms[0, 1]),
        {name: float(column[0]) for name, column in extras.items()},
    )


def decide_columns(
    module: ModuleType,
    learner: GradientBase,
    x: FloatArray,
    ids: list[str],
    uniforms: FloatArray,
    snap: Snapshot,
    given: object,
) -> DecisionColumns | None:
    """``act_columns``' decisions by one kernel call, or None where it does not apply."""
    plan = _plan(learner, snap)
    if plan is None:
        return None
    action, propensity, greedy, leaves, output, extras = _tick(
        module, learner, plan, x, uniforms, snap
    )
    if learner.task != "classification":
        return learner._regression_columns(
            BatchOutput(output=output, leaf=leaves, extras=extras), x, ids, uniforms,
            snap.version, given,
        )  # fmt: skip
    return DecisionColumns(
        event_ids=ids,
        contexts=context_rows(x, given),
        model_version=snap.version,
        explored=(action != greedy).tolist(),
        action=action.tolist(),
        propensity=propensity.tolist(),
        greedy_action=greedy.tolist(),
        perturbation=[0] * len(ids),
        leaf=None if leaves is None else leaves.tolist(),
        extras={name: column.tolist() for name, column in extras.items()} or None,
        context_array=x,
        kernel_arrays=None if extras else (action, propensity, greedy, leaves),
    )


def served_values(
    module: ModuleType, learner: GradientBase, x: FloatArray, actions: IntArray
) -> FloatArray | None:
    """The served single tree's predicted reward of each row's action ``(B,)`` for
    contexts ``x`` ``(B, d)`` by one ``decide`` call (its scores), or None where the
    learner is not one tree the kernel decides."""
    snap = learner._snapshot
    trees = _trees(learner, snap.frozen)
    if trees is None or trees[0] != "single" or learner.task != "classification":
        return None
    weights, theta, linear = trees[1]
    _, _, _, _, _, scores = decide_rows(
        module, np.ascontiguousarray(x, dtype=np.float64), snap.mean, snap.inv_scale, weights,
        theta, linear, np.zeros(x.shape[0]), clip=learner.context_clip, aggregate="single",
        sigmoid=learner.reward_link == "sigmoid", explorer=None, parameter=0.0,
    )  # fmt: skip
    out: FloatArray = scores[np.arange(x.shape[0]), actions]
    return out


def learns_natively(learner: GradientBase) -> bool:
    """Whether the kernel computes this learner's window gradients."""
    model = learner.model
    return (
        type(model) is DGTSpec
        and model.n_layers == 1
        and type(learner.estimator) is ClassificationEstimator
        and learner._clip is None
    )


def gradients(
    module: ModuleType,
    learner: GradientBase,
    x: FloatArray,
    buffer: Sequence[tuple[FloatArray, Decision, Feedback]],
) -> Params:
    """The window's gradients (``dgt_gradients_batch`` with the eq. 8 upstreams) by one
    kernel call, for a learner where :func:`learns_natively` holds."""
    est = cast(ClassificationEstimator, learner.estimator)
    model = cast(DGTSpec, learner.model)
    params = learner._params
    actions = np.array([cast(int, d.action) for _, d, _ in buffer], dtype=np.int64)
    propensity = np.array([d.propensity for _, d, _ in buffer], dtype=np.float64)
    loss = np.array([cast(float, f.loss) for _, _, f in buffer], dtype=np.float64)
    bias = params.get("bias") if model.shared_bias else None
    linear = params.get("linear") if model.linear else None
    return window_gradients(
        module,
        np.ascontiguousarray(x),
        actions,
        propensity,
        loss,
        np.ascontiguousarray(params["W0"]),
        np.ascontiguousarray(params["theta"]),
        None if bias is None else np.ascontiguousarray(bias),
        None if linear is None else np.ascontiguousarray(linear),
        sigmoid=est.link == "sigmoid",
        cap=est.max_importance_weight,
        aware=est.importance_aware,
        graded=model._graded_extras,
    )


#: the parameters of a single-layer DGT tree, in the kernel's order
_PARAMS = ("W0", "theta", "bias", "linear")


def learns_chunks(learner: GradientBase) -> bool:
    """Whether :func:`learn_run` covers ``learner``: a window the kernel differentiates
    (:func:`learns_natively`), RMSprop without penalties, the ridge without deferred
    rounds (or none), the running statistics and the optimizer on the kernel."""
    if not (learner._native and learns_natively(learner)):
        return False
    model = cast(DGTSpec, learner.model)
    params, opt, ridge = learner._params, learner._optimizer, learner._ridge
    if not set(params) <= set(_PARAMS) or opt.kernel is None:
        return False
    if (opt.l1 or opt.l2) and not set(opt.regularised).isdisjoint(params):
        return False
    if learner.standardize and learner._standardizer.kernel is None:
        return False
    if ridge is not None and (
        ridge.defer or ridge.kernel is None or any(model._graded_extras)
        or not (model.shared_bias and model.linear)
    ):  # fmt: skip
        return False
    stats = learner._leaf_stats
    return stats is None or stats.n_trees == 1


_ACTION, _PROPENSITY = attrgetter("action"), attrgetter("propensity")
_LOSS, _LOSSES = attrgetter("loss"), attrgetter("losses")


def chunk_columns(
    decisions: Sequence[Decision], feedbacks: Sequence[Feedback], n_actions: int
) -> tuple[IntArray, FloatArray, FloatArray]:
    """The chunk's actions, propensities and losses as arrays; an entry the kernel must
    not learn (a type the checks refuse, two-point losses) gets action -1, so the kernel
    stops there and the Python path learns it (or names its error)."""
    actions = list(map(_ACTION, decisions))  # attrgetter: no Python frame an entry
    propensity = list(map(_PROPENSITY, decisions))
    loss = list(map(_LOSS, feedbacks))
    if (
        set(map(type, actions)) <= {int}
        and set(map(type, propensity)) <= {float}
        and set(map(type, loss)) <= {float, int}
        and not any(map(_LOSSES, feedbacks))  # two-point losses: a pair, never empty
        and (not actions or (0 <= min(cast(list[int], actions)) < n_actions))
        and max(cast(list[int], actions), default=0) < n_actions
    ):
        return (
            np.array(actions, dtype=np.int64),
            np.array(propensity, dtype=np.float64),
            np.array(loss, dtype=np.float64),
        )
    plain = [
        type(a) is int and 0 <= a < n_actions and type(p) in (float, int)
        and type(v) in (float, int) and f.losses is None
        for a, p, v, f in zip(actions, propensity, loss, feedbacks, strict=True)
    ]  # fmt: skip
    return (
        np.array([a if ok else -1 for a, ok in zip(actions, plain, strict=True)], dtype=np.int64),
        np.array([p if ok else 1.0 for p, ok in zip(propensity, plain, strict=True)]),
        np.array([v if ok else 0.0 for v, ok in zip(loss, plain, strict=True)]),
    )


def learn_run(
    module: ModuleType,
    learner: GradientBase,
    rows: FloatArray,
    columns: tuple[IntArray, FloatArray, FloatArray],
    decisions: Sequence[Decision],
    feedbacks: Sequence[Feedback],
    at: int,
    out: list[bool | ValueError | KeyError | TypeError],
    windows: tuple[int, int],
    served: FloatArray | None = None,
) -> int:
    """``learn_batch``'s entries from ``at`` on by one kernel call, for a learner where
    :func:`learns_chunks` holds: until the chunk's end or an entry the Python path must
    learn (one that fails a check, or the drift detector's signal).  Appends their
    results to ``out`` and returns the index of the first entry not learned.  With
    ``served`` ``(B,)``, each entry learned gets the served tree's predicted reward of
    its played action before it is learned (``Deciding.served_rewards``'s numbers).

    The state goes in and comes back whole (the parameters as fresh arrays, published
    with the snapshot of the last step), so the Python path can take any entry next.
    """
    model = cast(DGTSpec, learner.model)
    est = cast(ClassificationEstimator, learner.estimator)
    opt, ridge, std, det = (
        learner._optimizer,
        learner._ridge,
        learner._standardizer,
        learner._detector,
    )
    learner._fold_inputs()
    old = learner._params
    bias_in = model.shared_bias and "bias" in old
    linear_in = model.linear and "linear" in old
    params = (
        old["W0"].copy(),
        old["theta"].copy(),
        old["bias"].copy() if bias_in else None,
        old["linear"].copy() if linear_in else None,
    )
    graded = (True, True, bias_in and ridge is None, linear_in and ridge is None)
    accum = learner._accum
    grads = tuple(
        (accum[name] if accum else np.empty(p.shape)) if on and p is not None else None
        for name, p, on in zip(_PARAMS, params, graded, strict=True)
    )
    kept = opt._square_avg
    squares = tuple(
        None
        if g is None
        else (np.ascontiguousarray(kept[name]) if name in kept else np.empty(g.shape))
        for name, g in zip(_PARAMS, grads, strict=True)
    )
    buffer = learner._buffer
    if buffer:
        bx = np.array([b[0] for b in buffer])
        buffered = (
            bx,
            np.array([b[1].action for b in buffer], dtype=np.int64),
            np.array([b[1].propensity for b in buffer], dtype=np.float64),
            np.array([b[2].loss for b in buffer], dtype=np.float64),
        )
    else:
        buffered = (np.empty((0, learner.n_features)), _NO_INTS, _NO_FLOATS, _NO_FLOATS)
    snap = learner._snapshot
    mean, m2 = std.mean.copy(), std.m2.copy()
    snap_mean, snap_inv = snap.mean.copy(), snap.inv_scale.copy()
    stats = learner._leaf_stats
    leaves = (
        None if stats is None
        else (stats.decisions[0], stats.feedbacks[0], stats.loss_sum[0], stats.action_counts[0])
    )  # fmt: skip
    istate = np.array([
        learner._n_learned, learner._pending, int(not accum), int(learner._accum_finite),
        learner._refused, opt.refused, 0, std.count, 0 if det is None else det.n,
        sum(1 << i for i, name in enumerate(_PARAMS) if name in kept), 0, 0,
    ], dtype=np.int64)  # fmt: skip
    fstate = np.array([
        learner._loss_sum, opt.lr,
        *((0.0,) * 5 if det is None else (det.mean, det.cum, det.low, det.jump_cum, det.jump_low)),
    ])  # fmt: skip
    config = _config(learner, est, windows)
    n = len(rows)
    learned = np.zeros(n, dtype=np.int64)
    serving = None
    if served is not None:  # the snapshot's tree, as decide reads it
        weights, theta, linear = cast(_Stacked, snap.frozen).stacked
        serving = (served, weights[0], theta[0], None if linear is None else linear[0])
    module.learn_chunk(
        rows, columns[0], columns[1], columns[2], at, buffered, learned, params, squares,
        grads, None if ridge is None else (ridge.inv_gram, ridge.weights, ridge.mix_stats, ridge.prior),
        (mean, m2), (snap_mean, snap_inv), leaves, istate, fstate, config, serving,
    )  # fmt: skip
    (n_learned, pending, accum_empty, accum_finite, refused, opt_refused, steps, count,
     det_n, squared, stop, tail) = istate.tolist()  # fmt: skip
    out.extend(learned[at:stop].astype(bool).tolist())
    nb = len(buffer)
    learner._buffer = [
        buffer[v] if v < nb else (rows[at + v - nb], decisions[at + v - nb], feedbacks[at + v - nb])
        for v in range(tail, nb + stop - at)
    ]
    learner._n_learned, learner._pending, learner._refused = n_learned, pending, refused
    learner._accum_finite = bool(accum_finite)
    learner._accum = {} if accum_empty else {
        name: g for name, g in zip(("theta", "bias", "linear", "W0"), (grads[1], grads[2], grads[3], grads[0]), strict=True)
        if g is not None
    }  # fmt: skip
    learner._loss_sum, opt.lr = float(fstate[0]), float(fstate[1])
    opt.refused = opt_refused
    for i, (name, v) in enumerate(zip(_PARAMS, squares, strict=True)):
        if v is not None and squared & (1 << i):
            kept[name] = v
    if det is not None:
        det.n = det_n
        det.mean, det.cum, det.low, det.jump_cum, det.jump_low = fstate[2:7].tolist()
    if learner.standardize:
        std.count, std.mean, std.m2 = count, mean, m2
    if steps:
        # a parameter the kernel did not hold (a bias without ``shared_bias``) as it was
        new = {
            name: old[name] if p is None else p
            for name, p in zip(_PARAMS, params, strict=True)
            if name in old
        }
        learner._params = new
        learner._snapshot = replace(
            snap, version=snap.version + steps, frozen=learner.model.freeze_unprepared(new),
            mean=snap_mean, inv_scale=snap_inv,
        )  # fmt: skip
    return cast(int, stop)


_NO_INTS = np.empty(0, dtype=np.int64)
_NO_FLOATS = np.empty(0)


def _config(
    learner: GradientBase, est: ClassificationEstimator, windows: tuple[int, int]
) -> FloatArray:
    """The kernel's settings of ``learner`` (``_chunk.h``'s ``C_`` order); ``windows``:
    the eager rounds and the most examples buffered (``learn.py``)."""
    opt, det, ridge = learner._optimizer, learner._detector, learner._ridge
    low, high = learner.loss_bounds if learner.loss_bounds is not None else (-np.inf, np.inf)
    cap = est.max_importance_weight
    return np.array([
        learner.accumulate, *windows, learner.learning_rate,
        learner.learning_rate_decay or 0.0, learner.learning_rate_floor, opt.alpha, opt.eps,
        *(opt.lr_scales.get(name, 1.0) for name in _PARAMS),
        *(float(name in opt.summed) for name in _PARAMS),
        learner.context_clip or 0.0, float(est.link == "sigmoid"),
        0.0 if cap is None else float(cap), float(est.importance_aware),
        0.0 if ridge is None else ridge.mix_rate, low, high,
        float(det is not None),
        *((det.threshold, det.delta, det.min_rounds, det.jump_threshold or 0.0, det.jump_delta)
          if det is not None else (1.0, 0.0, 0.0, 0.0, 0.0)),
        float(learner.standardize),
    ], dtype=np.float64)  # fmt: skip
