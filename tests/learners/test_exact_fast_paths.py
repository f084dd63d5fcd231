"""The learner's cheaper paths give the plain paths' very bits.

A window's upstreams in one call, a frozen tree built without its checks, 0-d array
operands in the optimizer: each spends less per update, and replays must still equal
earlier runs bit for bit (``test_exact_updates`` holds the statistics to the same bar).
"""

from __future__ import annotations

import numpy as np
import pytest

from banditree.core.records import Decision, Feedback
from banditree.estimators.classification import ClassificationEstimator
from banditree.learners.gradient_bandit.upstreams import WindowUpstreams
from banditree.learners.optim import RMSprop
from banditree.models.dgt.frozen import FrozenTree
from banditree.models.dgt.spec import DGTSpec
from banditree.models.spec import upstream_rows

K, D = 5, 6


def _window(n: int, seed: int) -> tuple[list[Decision], list[Feedback]]:
    rng = np.random.default_rng(seed)
    decisions = [
        Decision(
            event_id=f"e{i}",
            context=tuple(rng.normal(size=D).tolist()),
            model_version=0,
            action=int(rng.integers(K)),
            propensity=float(rng.uniform(0.05, 1.0)),
        )
        for i in range(n)
    ]
    feedbacks = [Feedback(loss=float(rng.integers(2))) for _ in range(n)]
    return decisions, feedbacks


@pytest.mark.parametrize(
    ("link", "cap", "aware"),
    [("sigmoid", None, False), ("identity", 3.0, False), ("sigmoid", 3.0, True)],
)
def test_classification_rows_equal_each_row_alone(
    link: str, cap: float | None, aware: bool
) -> None:
    est = ClassificationEstimator(max_importance_weight=cap, link=link, importance_aware=aware)
    decisions, feedbacks = _window(9, seed=1)
    outputs = np.random.default_rng(2).normal(scale=3.0, size=(9, K))
    alone = np.array(
        [est.upstream(o, d, f) for o, d, f in zip(outputs, decisions, feedbacks, strict=True)]
    )
    rows = est.upstream_rows(outputs, decisions, feedbacks)
    assert rows.dtype == alone.dtype and rows.tobytes() == alone.tobytes()
    window = WindowUpstreams(est, decisions, feedbacks)
    assert upstream_rows(window, outputs).tobytes() == alone.tobytes()
    assert [up(o).tobytes() for up, o in zip(window, outputs, strict=True)] == [
        row.tobytes() for row in alone
    ]
    assert len(window[2:5]) == 3 and window[3](outputs[3]).tobytes() == alone[3].tobytes()


@pytest.mark.parametrize("linear", [False, True])
def test_dgt_gradients_of_a_window_equal_those_of_its_callables(linear: bool) -> None:
    spec = DGTSpec(D, K, height=3, linear=linear)
    params = spec.init_params(np.random.default_rng(3))
    if linear:
        params["linear"] = np.random.default_rng(4).normal(scale=0.1, size=(K, D))
    est = ClassificationEstimator()
    decisions, feedbacks = _window(4, seed=5)
    x = np.array([d.context for d in decisions])
    window = WindowUpstreams(est, decisions, feedbacks)
    callables = [
        lambda out, d=d, f=f: est.upstream(out, d, f)
        for d, f in zip(decisions, feedbacks, strict=True)
    ]
    rng = np.random.default_rng(0)
    fast = spec.gradients_batch(params, x, window, rng)
    plain = spec.gradients_batch(params, x, callables, rng)
    assert fast.keys() == plain.keys()
    assert all(fast[k].tobytes() == plain[k].tobytes() for k in plain)


def test_a_frozen_tree_of_parameters_is_the_checked_tree() -> None:
    spec = DGTSpec(D, K, height=4, linear=True)
    params = spec.init_params(np.random.default_rng(6))
    frozen = spec.freeze(params)
    checked = FrozenTree(weights=frozen.weights, theta=frozen.theta, linear=frozen.linear)
    x = np.random.default_rng(7).normal(size=(50, D))
    assert frozen.predict(x).tobytes() == checked.predict(x).tobytes()
    assert [frozen.predict_one(row)[0] for row in x] == [checked.predict_one(row)[0] for row in x]
    with pytest.raises(ValueError, match="complete tree"):  # the public constructor checks
        FrozenTree(weights=frozen.weights[:-1], theta=frozen.theta)


def test_rmsprop_is_the_torch_formula_bit_for_bit() -> None:
    rng = np.random.default_rng(8)
    opt = RMSprop(lr=1e-2, alpha=0.9, lr_scales={"b": 3.0}, summed=("c",))
    params = {n: rng.normal(size=s) for n, s in (("a", (4, 3)), ("b", (5,)), ("c", (2,)))}
    ref, avg = {k: v.copy() for k, v in params.items()}, {}
    for step in range(30):
        if step == 10:
            opt.lr = 3e-3  # a decayed rate, or changed constants, take effect at once
        if step == 20:
            opt.alpha, opt.eps = 0.5, 1e-6
        grads = {k: rng.normal(size=v.shape) for k, v in params.items()}
        params = opt.step(params, grads)
        for k, g in grads.items():
            g2 = g * g if k == "c" else g * g * (1.0 - opt.alpha)
            avg[k] = g2 if k not in avg else (avg[k] if k == "c" else avg[k] * opt.alpha) + g2
            rate = opt.lr * (3.0 if k == "b" else 1.0)
            ref[k] = ref[k] - g / (np.sqrt(avg[k]) + opt.eps) * rate
            assert params[k].tobytes() == ref[k].tobytes(), (step, k)
