"""What a :class:`GradientBandit` hands the compiled kernel (:mod:`banditree.kernel`).

Each function returns None where the kernel does not cover the learner's setting (a
model family, an explorer or an estimator the kernel does not compute): the caller
then runs the numpy path, which is the specification for every setting.  Covered:
decisions of the DGT tree and forest (any height, the linear term, vote or average)
under the four explorers, with the event ids' uniforms; the gradients of a
single-layer DGT tree under classification feedback (eq. 8) without a gradient clip.
RMSprop's steps (:mod:`banditree.learners.optim`), the ridge's rounds
(:mod:`banditree.learners.ridge`) and the input statistics
(:mod:`banditree.learners.standardize`) take the kernel themselves, for every model.
"""

from __future__ import annotations

from collections.abc import Sequence
from types import ModuleType
from typing import TYPE_CHECKING, Protocol, cast

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.core.columns import DecisionColumns
from banditree.core.records import Decision, Feedback
from banditree.estimators import ClassificationEstimator, OnePointEstimator, TwoPointEstimator
from banditree.explore import EpsilonGreedy, Explorer, FastCB, Softmax, SquareCB
from banditree.kernel import decide_rows, event_uniform_rows, window_gradients
from banditree.learners.batch_decisions import context_rows, regression_columns
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


def decide_one(
    module: ModuleType, learner: GradientBase, x: FloatArray, event_id: str, snap: Snapshot
) -> tuple[int, float, int, int | None, FloatArray, float] | None:
    """``act``'s numbers for one context ``x`` ``(d,)`` by one kernel call: ``(action,
    propensity, greedy action, leaf or None, output (K,), the sign's uniform)``, or None
    where the kernel does not cover the learner (the numpy path then decides)."""
    trees = _trees(learner, snap.frozen)
    if trees is None:
        return None
    aggregate, (weights, theta, linear) = trees
    setting = None
    if learner.task == "classification":
        assert learner.explorer is not None
        setting = explorer_setting(learner.explorer, learner._explore_rounds)
        if setting is None:
            return None
    uniforms = event_uniform_rows(module, learner.seed, [event_id])
    action, propensity, greedy, leaf, output, _ = decide_rows(
        module, x.reshape(1, -1), snap.mean, snap.inv_scale, weights, theta, linear,
        uniforms[:, 0].copy(), clip=learner.context_clip, aggregate=aggregate,
        sigmoid=learner.reward_link == "sigmoid",
        explorer=None if setting is None else setting[0],
        parameter=0.0 if setting is None else setting[1],
    )  # fmt: skip
    return (
        int(action[0]),
        float(propensity[0]),
        int(greedy[0]),
        int(leaf[0]) if aggregate == "single" else None,
        output[0],
        float(uniforms[0, 1]),
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
    trees = _trees(learner, snap.frozen)
    if trees is None:
        return None
    aggregate, (weights, theta, linear) = trees
    classification = learner.task == "classification"
    setting = None
    if classification:
        assert learner.explorer is not None
        setting = explorer_setting(learner.explorer, learner._explore_rounds)
        if setting is None:
            return None
    action, propensity, greedy, leaf, output, _ = decide_rows(
        module,
        x,
        snap.mean,
        snap.inv_scale,
        weights,
        theta,
        linear,
        np.ascontiguousarray(uniforms[:, 0]),
        clip=learner.context_clip,
        aggregate=aggregate,
        sigmoid=learner.reward_link == "sigmoid",
        explorer=None if setting is None else setting[0],
        parameter=0.0 if setting is None else setting[1],
    )
    leaves = None if aggregate != "single" else leaf
    if not classification:
        est = learner.estimator
        return regression_columns(
            BatchOutput(output=output, leaf=leaves),
            x,
            ids,
            uniforms,
            version=snap.version,
            target_offset=learner.target_offset,
            target_scale=learner.target_scale,
            one_point_delta=est.delta if isinstance(est, OnePointEstimator) else None,
            two_point_delta=est.delta if isinstance(est, TwoPointEstimator) else None,
            given=given,
        )
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
        extras=None,
    )


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
