"""A boosted ensemble's decisions by the compiled kernel are the numpy reference's."""

from __future__ import annotations

from functools import cache, partial
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from banditree import kernel
from banditree.explore import make_explorer, sample_action
from banditree.learners import Feedback, InvalidInput, build_learner
from banditree.learners.boosted import BoostedBandit
from banditree.learners.gradient_bandit.kernel_calls import explorer_setting
from banditree.models.boosted.fit import BoostingSettings, fit_ensemble
from banditree.models.boosted.frozen import FrozenBoostedEnsemble
from banditree.models.boosted.linear import Z_CLIP
from banditree.models.boosted.stats import leaf_uncertainty
from tests.kernel.pairs import TOLERANCE

module = kernel.native()
assert module is not None  # tests.kernel.pairs skips the module without the kernel

#: (name, config): one and many features, two and many actions, each way to decide
CONFIGS: dict[str, dict[str, Any]] = {
    "default": {"n_features": 16, "n_actions": 10},
    "one-feature-two-actions": {"n_features": 1, "n_actions": 2},
    "many-actions": {"n_features": 3, "n_actions": 40, "height": 4},
    "many-features": {"n_features": 200, "n_actions": 3, "height": 3},
    "no-blend": {"n_features": 5, "n_actions": 4, "options": {"blend": False, "compete": False}},
    "uniform-starter": {"n_features": 4, "n_actions": 3, "options": {"starter": "uniform"}},
    "no-base": {"n_features": 4, "n_actions": 3, "options": {"linear_base": None}},
    "squarecb": {
        "n_features": 6, "n_actions": 5, "explorer": "squarecb",
        "options": {"exploration": "explorer"},
    },
    "softmax": {
        "n_features": 4, "n_actions": 3, "explorer": "softmax", "explorer_parameter": 0.05,
        "options": {"exploration": "explorer"},
    },
    "epsilon": {
        "n_features": 4, "n_actions": 6, "explorer": "epsilon_greedy",
        "explorer_parameter": 0.2, "options": {"exploration": "explorer"},
    },
    "fastcb": {"n_features": 3, "n_actions": 4, "options": {"exploration": "explorer"}},
}  # fmt: skip


@cache
def trained(name: str) -> tuple[BoostedBandit, BoostedBandit]:
    """``(native, reference)`` learners of ``CONFIGS[name]`` in one fitted state."""
    config = {"kind": "boosted", "n_trees": 8, "seed": 3, **CONFIGS[name]}
    config["options"] = {"first_fit": 60, "compete_halflife": 50, **config.get("options", {})}
    native, reference = build_learner(config), build_learner(config)
    assert isinstance(native, BoostedBandit) and isinstance(reference, BoostedBandit)
    assert native._kernel is module
    reference._kernel = None
    rng = np.random.default_rng(1)
    d, k = native.n_features, native.n_actions
    for i in range(260):
        x = rng.normal(size=d)
        label = (int(x[0] > 0) + 2 * int(x[-1] > 0.5)) % k
        decision = native.act(x, f"warm-{i}")
        native.learn(decision, Feedback(loss=float(decision.action != label)))
    assert native.fits >= 2 and native.ensemble_decides
    reference.load_state(*native.state())
    return native, reference


@pytest.mark.parametrize("name", sorted(CONFIGS))
@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), scale=st.sampled_from([0.5, 2.0, 1e6, 1e300]))
def test_the_learners_decide_alike(name: str, seed: int, scale: float) -> None:
    native, reference = trained(name)
    rng = np.random.default_rng(seed)
    x = rng.normal(size=native.n_features)
    x[rng.random(x.shape) < 0.2] *= scale  # a few columns far out: clipped, never NaN
    ours, theirs = native.act(x, f"e{seed}"), reference.act(x, f"e{seed}")
    assert ours.action == theirs.action
    assert ours.greedy_action == theirs.greedy_action
    assert abs(ours.propensity - theirs.propensity) <= TOLERANCE
    assert ours.model_version == theirs.model_version


@pytest.mark.parametrize("bad", [float("nan"), float("inf"), -float("inf")])
def test_the_learner_refuses_what_is_not_finite(bad: float) -> None:
    native, _ = trained("default")
    x = np.zeros(native.n_features)
    x[3] = bad
    with pytest.raises(InvalidInput, match="context"):
        native.act(x)


def ensemble(rng: np.random.Generator, d: int, k: int, trees: int, depth: int) -> Any:
    """A random ensemble of ``trees`` complete trees of ``depth``: context and action
    splits, thresholds on both sides of the one-hot's 0 and 1."""
    n = (1 << depth) - 1
    features = rng.integers(0, d + k, size=(trees, n))
    thresholds = rng.normal(size=(trees, n))
    arm = features >= d
    thresholds[arm] = rng.choice([-0.5, 0.0, 0.5, 1.0, 1.5], size=int(arm.sum()))
    thresholds[rng.random((trees, n)) < 0.1] = np.inf  # padding: always LEFT
    values = rng.normal(size=(trees, n + 1))
    uncertainty = rng.exponential(size=(trees, n + 1)) * (rng.random((trees, n + 1)) < 0.9)
    mean, scale = rng.normal(size=d), rng.exponential(size=d)
    base = rng.normal(size=(k, d + 1))
    return FrozenBoostedEnsemble(features, thresholds, values, uncertainty, d, k, mean, scale, base)


def reference_decision(
    frozen: FrozenBoostedEnsemble,
    x: np.ndarray,
    online: np.ndarray | None,
    errors: tuple[float, float],
    optimism: float,
    explorer: Any,
    t: int,
    u: float,
) -> tuple[int, float, int, np.ndarray, np.ndarray]:
    """The numpy path of ``BoostedBandit.act`` on ``frozen``."""
    mean, var = frozen.action_scores(x)
    total = errors[0] + errors[1]
    if online is not None and total > 0.0:
        mean = (errors[0] * mean + errors[1] * online) / total
    scores = mean + optimism * np.sqrt(var)
    if explorer is None:
        return int(np.argmax(scores)), 1.0, int(np.argmax(mean)), mean, scores
    pmf = explorer(scores, t)
    action = sample_action(pmf, u)
    return action, float(pmf[action]), int(np.argmax(mean)), mean, scores


EXPLORERS = [None, ("epsilon_greedy", 0.1), ("softmax", 0.05), ("squarecb", 10.0), ("fastcb", 10.0)]


@settings(max_examples=300, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    d=st.sampled_from([1, 2, 7, 64]),
    k=st.sampled_from([2, 3, 10, 70]),
    trees=st.sampled_from([0, 1, 5, 30]),
    depth=st.integers(1, 6),
    blend=st.booleans(),
    errors=st.sampled_from([(0.0, 0.0), (0.3, 0.1), (0.0, 2.0), (1e-300, 5.0)]),
    optimism=st.sampled_from([0.0, 0.3, 2.5]),
    which=st.integers(0, len(EXPLORERS) - 1),
    t=st.integers(0, 10_000),
    u=st.floats(0.0, 1.0, exclude_max=True),
)
def test_the_kernel_is_the_reference(
    seed: int,
    d: int,
    k: int,
    trees: int,
    depth: int,
    blend: bool,
    errors: tuple[float, float],
    optimism: float,
    which: int,
    t: int,
    u: float,
) -> None:
    rng = np.random.default_rng(seed)
    frozen = ensemble(rng, d, k, trees, depth)
    x = rng.normal(size=d) * rng.choice([1.0, 3.0, 1e200], size=d)
    online = rng.random(k) if blend else None
    chosen = EXPLORERS[which]
    explorer = None if chosen is None else make_explorer(chosen[0], chosen[1], None)
    setting = (None, 0.0) if explorer is None else explorer_setting(explorer, t)
    assert setting is not None
    want = reference_decision(frozen, x, online, errors, optimism, explorer, t, u)
    got = kernel.boosted_decide(
        module, x, frozen.tree_arrays, frozen.linear_arrays, Z_CLIP, online, errors, optimism,
        setting[0], setting[1], u,
    )  # fmt: skip
    np.testing.assert_allclose(got[3], want[3], rtol=TOLERANCE, atol=TOLERANCE)
    np.testing.assert_allclose(got[4], want[4], rtol=TOLERANCE, atol=TOLERANCE)
    assert got[2] == want[2] or near_tie(want[3], got[2], want[2])
    if got[0] != want[0]:  # only within rounding of a tie (or of a cumulative step)
        assert explorer is not None or near_tie(want[4], got[0], want[0])
    assert abs(got[1] - want[1]) <= TOLERANCE or got[0] != want[0]
    actions = sorted({0, k - 1, int(rng.integers(k))})
    for action in actions:  # one action's value, one walk a tree
        value = kernel.boosted_value(
            module, x, frozen.tree_arrays, frozen.linear_arrays, Z_CLIP, action
        )
        assert value == pytest.approx(frozen.action_value(x, action), rel=TOLERANCE, abs=TOLERANCE)
        assert value == pytest.approx(got[3][action], rel=TOLERANCE, abs=TOLERANCE) or blend
    # rows at once: each row's value, bit for bit
    rows = np.stack([x, -x, 2.0 * x])[rng.integers(0, 3, size=2 * len(actions))]
    picked = np.array(actions * 2, dtype=np.int64)
    values = kernel.boosted_values(
        module, rows, picked, frozen.tree_arrays, frozen.linear_arrays, Z_CLIP
    )
    for row, action, value in zip(rows, picked.tolist(), values.tolist(), strict=True):
        assert value == kernel.boosted_value(
            module, row, frozen.tree_arrays, frozen.linear_arrays, Z_CLIP, action
        )


def near_tie(values: np.ndarray, a: int, b: int) -> bool:
    return bool(abs(values[a] - values[b]) <= 1e-12 * max(1.0, abs(values[b])))


def test_the_walk_meets_every_action_split_it_can() -> None:
    """An action split deep in a tree is taken by its action alone: its leaf differs."""
    d, k, depth = 2, 4, 3
    n = (1 << depth) - 1
    features = np.zeros((1, n), dtype=np.int64)
    thresholds = np.full((1, n), np.inf)
    # root: x[0] > 0 RIGHT; node 2: action 3's column; node 6: action 1's column
    features[0, [0, 2, 6]] = [0, d + 3, d + 1]
    thresholds[0, [0, 2, 6]] = [0.0, 0.5, 0.5]
    values = np.arange(n + 1, dtype=np.float64)[None, :]
    frozen = FrozenBoostedEnsemble(
        features, thresholds, values, np.zeros((1, n + 1)), d, k,
        np.zeros(d), np.ones(d), np.zeros((k, d + 1)),
    )  # fmt: skip
    x = np.array([1.0, 0.0])
    got = kernel.boosted_decide(
        module, x, frozen.tree_arrays, frozen.linear_arrays, Z_CLIP, None, (0.0, 0.0), 0.0,
        None, 0.0, 0.0,
    )  # fmt: skip
    want, _ = frozen.action_scores(x)
    assert got[3].tolist() == want.tolist() == [4.0, 4.0, 4.0, 6.0]
    assert got[0] == 3


def test_the_messages_name_the_argument_and_the_bound() -> None:
    rng = np.random.default_rng(0)
    frozen = ensemble(rng, 3, 4, 2, 2)
    trees, linear = list(frozen.tree_arrays), list(frozen.linear_arrays)

    def call(**change: Any) -> str:
        args: dict[str, Any] = {
            "x": np.zeros(3), "features": trees[0], "thresholds": trees[1], "values": trees[2],
            "uncertainty": trees[3], "offset": linear[0], "scale": linear[1],
            "base": linear[2], "clip": Z_CLIP, "online": None, "e_online": 0.0,
            "e_ensemble": 0.0, "optimism": 0.3, "explorer": -1, "param": 0.0, "u": 0.0,
            "mean": np.zeros(4), "scores": np.zeros(4),
        }  # fmt: skip
        args.update(change)
        try:
            module.boosted_decide(*args.values())
        except (TypeError, ValueError) as err:
            return f"{type(err).__name__}: {err}"
        return "ok"

    assert call() == "ok"
    assert call(x=np.array([0.0, np.nan, 0.0])) == "ValueError: x[1] must be finite"
    assert call(x=np.array([0.0, 0.0, np.inf])) == "ValueError: x[2] must be finite"
    bad = trees[0].copy()
    bad[1, 2] = 7
    assert call(features=bad) == "ValueError: features[1][2] must be in [0, 6], got 7"
    assert call(base=np.zeros((4, 3))) == (
        "ValueError: base must be (K >= 1, d + 1 = 4), got (4, 3)"
    )
    assert call(online=np.array([0.0, 0.0, np.nan, 0.0])) == "ValueError: online[2] must be finite"
    assert call(optimism=-1.0) == "ValueError: optimism must be finite and >= 0, got -1.0"
    assert call(u=1.0) == "ValueError: u must be in [0, 1), got 1.0"
    assert call(values=trees[2][:, :-1].copy()).startswith("ValueError: values must have length")
    negative = trees[3].copy()
    negative[:] = -1.0
    assert call(uncertainty=negative).startswith("ValueError: the ensemble's predicted rewards")
    assert call(mean=np.zeros(4, dtype=np.int64)) == (
        "TypeError: mean must hold float64, got format l"
    )


def test_one_value_names_the_action_and_its_bound() -> None:
    frozen = ensemble(np.random.default_rng(0), 3, 4, 2, 2)
    trees, linear = frozen.tree_arrays, frozen.linear_arrays

    def value(action: int, x: np.ndarray | None = None) -> str:
        try:
            kernel.boosted_value(
                module, np.zeros(3) if x is None else x, trees, linear, 5.0, action
            )
        except ValueError as err:
            return str(err)
        return "ok"

    assert value(3) == "ok"
    assert value(4) == "action must be in [0, 3], got 4"
    assert value(-1) == "action must be in [0, 3], got -1"
    assert value(0, np.array([0.0, np.inf, 0.0])) == "x[1] must be finite"


@settings(max_examples=100, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    width=st.sampled_from([1, 3, 30]),
    trees=st.sampled_from([0, 1, 7]),
    depth=st.integers(1, 6),
    rows=st.sampled_from([0, 1, 50]),
)
def test_the_rows_reach_the_leaves_of_the_numpy_walk(
    seed: int, width: int, trees: int, depth: int, rows: int
) -> None:
    rng = np.random.default_rng(seed)
    n = (1 << depth) - 1
    features = rng.integers(0, width, size=(trees, n))
    thresholds = rng.normal(size=(trees, n))
    thresholds[rng.random((trees, n)) < 0.1] = np.inf
    inputs = rng.normal(size=(rows, width))
    inputs[rng.random(inputs.shape) < 0.2] = rng.choice([0.0, 1.0])  # one-hot-like columns
    frozen = FrozenBoostedEnsemble(
        features, thresholds, np.zeros((trees, n + 1)), np.zeros((trees, n + 1)), width, 1,
        np.zeros(width), np.ones(width), np.zeros((1, width + 1)),
    )  # fmt: skip
    got = kernel.boosted_route(module, inputs, frozen.features, frozen.thresholds)
    np.testing.assert_array_equal(got, frozen.route(inputs))


@pytest.mark.parametrize("prior", [0.0, 3.0])
def test_a_fit_routed_by_the_kernel_is_the_fit_routed_by_lightgbm(prior: float) -> None:
    """The kernel's walk and leaf sums, or LightGBM's leaves and numpy's bincounts: the
    same ensemble, bit for bit."""
    rng = np.random.default_rng(4)
    x = rng.normal(size=(700, 5))
    actions = rng.integers(0, 3, size=700)
    rewards = (rng.random(700) < 0.4).astype(np.float64)
    settings = BoostingSettings(n_trees=12, depth=4, linear_l2=10.0, prior=prior)
    route = partial(kernel.boosted_route, module)
    ours = fit_ensemble(
        x, actions, rewards, 3, settings, 0, route, partial(kernel.boosted_leaf_sums, module)
    )
    theirs = fit_ensemble(x, actions, rewards, 3, settings, 0)
    for name, value in theirs.tensors().items():
        assert ours.tensors()[name].tobytes() == value.tobytes(), name
    assert ours.uncertainty.any()


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    rows=st.sampled_from([0, 1, 5, 300]),
    trees=st.integers(1, 6),
    leaves=st.sampled_from([1, 2, 8]),
    prior=st.sampled_from([0.0, 0.5, 4.0]),
    scale=st.sampled_from([1.0, 1e-8, 1e150]),
)
def test_the_kernels_leaf_sums_are_the_bincounts(
    seed: int, rows: int, trees: int, leaves: int, prior: float, scale: float
) -> None:
    """``boosted_leaf_sums`` in ``leaf_uncertainty``: numpy's uncertainty bit for bit,
    leaves no row reaches included."""
    rng = np.random.default_rng(seed)
    flat = rng.integers(0, leaves, size=(rows, trees)) + np.arange(trees) * leaves
    targets = rng.normal(size=rows) * scale
    values = rng.normal(size=(trees, leaves))
    want = leaf_uncertainty(flat, targets, values, prior=prior)
    got = leaf_uncertainty(
        flat, targets, values, prior=prior, sums=partial(kernel.boosted_leaf_sums, module)
    )
    assert got.tobytes() == want.tobytes()
