"""A tick of the TEL and hinge families by the compiled kernel (:mod:`banditree.kernel`).

A :class:`GradientBandit` whose model is a Tree Ensemble Layer
(:class:`~banditree.models.tel.spec.TELSpec`) or a random hinge forest or fern ensemble
(:class:`~banditree.models.hinge.spec.HingeSpec`) decides a tick of contexts by one
kernel call (:func:`~banditree.kernel.tel_decide`, :func:`~banditree.kernel.hinge_decide`):
standardising, the model's forward pass for every action and the explorer, as
:func:`~banditree.learners.gradient_bandit.kernel_calls.decide_columns` does for DGT
trees.  The numpy passes (``model.forward`` and ``model.forward_rows``) stay the
reference (``BANDITREE_KERNEL=reference``); learning stays in numpy.
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, cast

import numpy as np

from banditree.core.arrays import FloatArray, IntArray
from banditree.kernel import hinge_decide, tel_decide
from banditree.models.hinge.frozen import FrozenHingeForest
from banditree.models.hinge.spec import HingeSpec
from banditree.models.spec import ModelSpec
from banditree.models.tel.frozen import FrozenTEL
from banditree.models.tel.spec import TELSpec

if TYPE_CHECKING:
    from banditree.learners.gradient_bandit.base import GradientBase, Snapshot

#: a tick's numbers: ``(action, propensity, greedy, leaf or None, output, extras)``,
#: ``(B,)`` arrays but ``output`` ``(B, K)``; ``extras`` maps a figure to its ``(B,)``
Tick = tuple[IntArray, FloatArray, IntArray, IntArray | None, FloatArray, dict[str, FloatArray]]


def is_form(model: ModelSpec) -> bool:
    """Whether the kernel decides for ``model``'s family here (TEL or hinge)."""
    return type(model) is TELSpec or type(model) is HingeSpec


def form_tick(
    module: ModuleType,
    learner: GradientBase,
    x: FloatArray,
    uniforms: FloatArray,
    snap: Snapshot,
    setting: tuple[str, float] | None,
) -> Tick:
    """The decisions of contexts ``x`` ``(B, d)`` (finite, float64, C-contiguous) with the
    event ids' ``uniforms`` ``(B, 2)``, for a learner where :func:`is_form` holds;
    ``setting`` is the explorer's ``(name, parameter)``, None for regression.

    TEL's extras are those of :meth:`~banditree.models.tel.spec.TELSpec.forward_rows`:
    the leaves reached, averaged over the trees and in total.
    """
    model = learner.model
    explorer, parameter = (None, 0.0) if setting is None else setting
    sigmoid = learner.reward_link == "sigmoid"
    u = np.ascontiguousarray(uniforms[:, 0])
    if type(model) is TELSpec:
        frozen = cast(FrozenTEL, snap.frozen)
        nodes, leaves = frozen.kernel_arrays()
        action, propensity, greedy, output, reached = tel_decide(
            module, x, snap.mean, snap.inv_scale, nodes, leaves, u, clip=learner.context_clip,
            dense=frozen.dense, sigmoid=sigmoid, explorer=explorer, parameter=parameter,
        )  # fmt: skip
        totals = reached.astype(np.float64)
        extras = {"reachable_leaves": totals / model.n_trees, "reachable_leaves_total": totals}
        return action, propensity, greedy, None, output, extras
    forest = cast(FrozenHingeForest, snap.frozen)
    action, propensity, greedy, leaf, output = hinge_decide(
        module, x, snap.mean, snap.inv_scale, forest.kernel_forest(), u,
        clip=learner.context_clip, ferns=forest.ferns, sigmoid=sigmoid, explorer=explorer,
        parameter=parameter,
    )  # fmt: skip
    return action, propensity, greedy, leaf if forest.n_trees == 1 else None, output, {}
