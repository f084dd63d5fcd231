"""Explorers: valid probability masses, their promises, logged propensities, determinism."""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from banditree.explore import (
    EpsilonGreedy,
    Explorer,
    FastCB,
    Softmax,
    SquareCB,
    event_uniforms,
    explore_and_sample,
    make_explorer,
    sample_action,
)
from banditree.learners import Feedback, LearnerConfig, build_learner
from banditree.models.dgt.frozen import FrozenTree

EXPLORERS: list[Explorer] = [
    EpsilonGreedy(0.0),
    EpsilonGreedy(0.3),
    EpsilonGreedy(1.0),
    EpsilonGreedy(1.0, exponent=1 / 3),
    Softmax(0.05),
    Softmax(10.0),
    Softmax(1.0, exponent=0.5),
    SquareCB(0.0, 0.0),
    SquareCB(100.0, 0.0),
    SquareCB(1e5, 0.0),
    SquareCB(10.0, 0.5),
    SquareCB(10.0, 1.0),
    FastCB(0.0, 0.0),
    FastCB(50.0, 0.5),
    FastCB(1e5, 0.0),
]
scores_strategy = arrays(
    np.float64,
    st.integers(2, 40),
    elements=st.floats(0.0, 1.0, allow_nan=False, allow_subnormal=False),
)


@pytest.mark.parametrize("explorer", EXPLORERS, ids=lambda e: f"{e.name}")
@settings(max_examples=60, deadline=None)
@given(scores=scores_strategy, t=st.integers(0, 10**7))
def test_pmf_is_a_probability_mass_with_the_promised_floor(
    explorer: Explorer, scores: np.ndarray, t: int
) -> None:
    pmf = explorer(scores, t)
    k = scores.size
    assert pmf.shape == (k,)
    assert (pmf >= 0.0).all()
    assert math.isclose(float(pmf.sum()), 1.0, abs_tol=1e-12)
    assert (pmf >= explorer.min_probability(k, t) - 1e-15).all()
    assert int(np.argmax(pmf)) == int(np.argmax(scores)) or np.isclose(
        pmf.max(), pmf[int(np.argmax(scores))]
    )


@settings(max_examples=60, deadline=None)
@given(
    scores=scores_strategy,
    t=st.integers(0, 10**6),
    later=st.integers(1, 10**6),
    scale=st.floats(0.1, 100.0),
    exponent=st.floats(0.05, 1.0),
)
def test_schedules_move_probability_to_the_best_action_as_rounds_pass(
    scores: np.ndarray, t: int, later: int, scale: float, exponent: float
) -> None:
    """Decaying epsilon / temperature and growing gamma: the greedy action's probability
    never falls with t, and the floors follow their formulas."""
    best = int(np.argmax(scores))
    for explorer in (
        EpsilonGreedy(min(scale / 100.0, 1.0), exponent),
        Softmax(scale / 100.0, exponent),
        SquareCB(scale, exponent),
        FastCB(scale, exponent),
    ):
        now, then = explorer(scores, t), explorer(scores, t + later)
        assert then[best] >= now[best] - 1e-12, explorer
    k = scores.size
    eps = EpsilonGreedy(1.0, exponent)
    assert eps.min_probability(k, t) == pytest.approx((1.0 + t) ** -exponent / k)
    cb = SquareCB(scale, exponent)
    assert cb.gamma_at(t) == pytest.approx(scale * t**exponent)
    assert cb.gamma_at(t + later) > cb.gamma_at(t)


def test_squarecb_matches_vowpal_wabbits_inverse_gap_weighting() -> None:
    """gamma_t = 10 sqrt(t); a non-best action gets 1 / (K + gamma_t gap)."""
    scores = np.array([0.2, 0.7, 0.5])
    pmf = SquareCB()(scores, 400)  # gamma = 200
    np.testing.assert_allclose(pmf[[0, 2]], [1 / (3 + 200 * 0.5), 1 / (3 + 200 * 0.2)])
    assert pmf[1] == pytest.approx(1 - pmf[0] - pmf[2])
    np.testing.assert_allclose(SquareCB()(scores, 0), [1 / 3] * 3)  # uniform before learning


@settings(max_examples=60, deadline=None)
@given(scores=scores_strategy, t=st.integers(0, 10**6), scale=st.floats(0.0, 1e3))
def test_fastcb_is_squarecb_at_gamma_over_the_greedy_loss(
    scores: np.ndarray, t: int, scale: float
) -> None:
    """A non-best action gets ``l / (K l + gamma_t gap)``, ``l`` the greedy action's predicted
    loss clipped to [0.01, 1]: SquareCB at ``gamma_t / l``; at a loss of 1, SquareCB itself."""
    k, best = scores.size, int(np.argmax(scores))
    loss = min(max(1.0 - float(scores[best]), 0.01), 1.0)
    gamma = scale * t**0.5
    pmf = FastCB(scale, 0.5)(scores, t)
    others = np.arange(k) != best
    expected = loss / (k * loss + gamma * (scores[best] - scores))
    np.testing.assert_allclose(pmf[others], expected[others], rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(pmf, SquareCB(scale / loss, 0.5)(scores, t), rtol=1e-12)
    lowered = scores - float(scores[best])  # the best at 0: a predicted loss of 1
    np.testing.assert_array_equal(FastCB(scale, 0.5)(lowered, t), SquareCB(scale, 0.5)(lowered, t))


def test_fastcb_explores_less_where_the_greedy_action_rarely_loses() -> None:
    """The same gap of 0.5 costs 1 / (2 + gamma 0.5 / l) exploration: l = 0.5 and 0.05."""
    explorer = FastCB(10.0, 0.0)
    unsure, sure = explorer(np.array([0.5, 0.0])), explorer(np.array([0.95, 0.45]))
    assert unsure[1] == pytest.approx(1 / (2 + 10 * 0.5 / 0.5))
    assert sure[1] == pytest.approx(1 / (2 + 10 * 0.5 / 0.05))
    # a predicted reward at or past 1 explores as a loss of 0.01 (never a division by 0)
    assert explorer(np.array([1.2, 0.7]))[1] == pytest.approx(1 / (2 + 10 * 0.5 / 0.01))
    assert explorer.min_probability(2) == pytest.approx(1 / (2 + 10 / 0.01))


def test_make_explorer_defaults_and_exponents() -> None:
    assert make_explorer("fastcb") == FastCB(50.0, 0.5)
    assert LearnerConfig(n_features=2, n_actions=3).explorer == "fastcb"
    assert make_explorer("squarecb") == SquareCB(50.0, 0.5)
    assert make_explorer("epsilon_greedy") == EpsilonGreedy(0.3, 0.0)
    assert make_explorer("epsilon_greedy", 0.5, 0.25) == EpsilonGreedy(0.5, 0.25)
    assert make_explorer("softmax", None, 0.5) == Softmax(0.1, 0.5)


def test_epsilon_greedy_is_eq7() -> None:
    pmf = EpsilonGreedy(0.3)(np.array([0.2, 0.7, 0.1, 0.7]))
    np.testing.assert_allclose(pmf, [0.075, 0.775, 0.075, 0.075])  # ties: lowest index


@pytest.mark.parametrize("seed", [0, 7, 2**40 + 3])
def test_event_uniforms_are_the_halves_of_the_event_digest(seed: int) -> None:
    """The draw of an event is fixed by (seed, event id): blake2b-128 of ``"seed:id"``,
    its two little-endian 64-bit halves over 2**64 (stored decisions rely on it)."""
    for event_id in ["0-0", "7-1f", "", "given-42", "\u00fc\u20ac", "x" * 200]:
        digest = hashlib.blake2b(f"{seed}:{event_id}".encode(), digest_size=16).digest()
        low, high = (int.from_bytes(half, "little") for half in (digest[:8], digest[8:]))
        assert event_uniforms(seed, event_id) == (low / 2.0**64, high / 2.0**64)
    assert event_uniforms(0, "0-0") == event_uniforms(0, "0-0") != event_uniforms(1, "0-0")


def test_sampling_frequencies_match_the_pmf() -> None:
    pmf = np.array([0.05, 0.6, 0.1, 0.25])
    n = 20_000
    draws = np.array([sample_action(pmf, event_uniforms(7, f"e{i}")[0]) for i in range(n)])
    for k, p in enumerate(pmf):
        freq = float((draws == k).mean())
        assert abs(freq - p) <= 4.0 * math.sqrt(p * (1 - p) / n), (k, freq, p)


@pytest.mark.parametrize(
    "explorer,parameter,link",
    [
        ("epsilon_greedy", 0.3, "sigmoid"),
        ("softmax", 0.1, "sigmoid"),
        ("squarecb", 50.0, "sigmoid"),
        ("squarecb", 10.0, "identity"),
    ],
)
def test_logged_propensity_is_the_pmf_of_the_played_action(
    explorer: str, parameter: float, link: str
) -> None:
    """Recompute the pmf from the exported tree and the rounds learned: the decision's
    propensity must be its entry."""
    rng = np.random.default_rng(0)
    learner = build_learner(
        LearnerConfig(
            kind="dgt",  # a single tree: its export is the served policy
            n_features=4,
            n_actions=5,
            height=3,
            explorer=explorer,
            explorer_parameter=parameter,
            reward_link=link,
            standardize=False,
            learning_rate=0.05,
            accumulate=1,
        )
    )
    policy = make_explorer(explorer, parameter)
    explored = 0
    for i in range(300):
        x = rng.normal(size=4)
        tree = FrozenTree.from_json(learner.export_model())
        leaf, logits = tree.predict_one(x)
        scores = 1.0 / (1.0 + np.exp(-logits)) if link == "sigmoid" else logits
        pmf = policy(scores, i)  # i rounds learned so far
        d = learner.act(x)
        assert d.leaf == leaf and d.model_version == learner.version
        assert d.propensity == pytest.approx(float(pmf[d.action]), abs=1e-12)
        assert d.greedy_action == int(np.argmax(logits))
        explored += d.explored
        learner.learn(d, Feedback(loss=float(d.action != i % 5)))
    assert explored > 0


def test_same_event_id_same_decision() -> None:
    config = LearnerConfig(
        n_features=3,
        n_actions=4,
        height=2,
        explorer="epsilon_greedy",
        explorer_parameter=0.9,
        seed=5,
    )
    a, b = build_learner(config), build_learner(config)
    x = [0.1, -0.4, 2.0]
    first = [a.act(x, event_id=f"user-{i}") for i in range(50)]
    assert len({d.action for d in first}) > 1  # the ids do draw different actions
    assert [a.act(x, event_id=f"user-{i}").action for i in range(50)] == [d.action for d in first]
    assert [b.act(x, event_id=f"user-{i}").to_dict() for i in range(50)] == [
        d.to_dict() for d in first
    ]
    other_seed = build_learner(config.model_copy(update={"seed": 6}))
    assert [other_seed.act(x, event_id=f"user-{i}").action for i in range(50)] != [
        d.action for d in first
    ]


@pytest.mark.parametrize(
    "make,value,bound",
    [
        (EpsilonGreedy, -0.1, r"epsilon must be in \[0, 1\]"),
        (EpsilonGreedy, 1.5, r"epsilon must be in \[0, 1\]"),
        (EpsilonGreedy, float("nan"), r"epsilon must be in \[0, 1\]"),
        (Softmax, 0.0, "temperature must be > 0"),
        (Softmax, float("inf"), "temperature must be > 0"),
        (SquareCB, -1.0, "gamma must be >= 0"),
        (SquareCB, float("nan"), "gamma must be >= 0"),
        (lambda v: SquareCB(10.0, v), -0.5, r"exponent must be in \[0, 2\]"),
        (FastCB, -1.0, "gamma must be >= 0"),
        (lambda v: FastCB(10.0, v), 2.5, r"exponent must be in \[0, 2\]"),
        (lambda v: EpsilonGreedy(0.1, v), float("inf"), r"exponent must be in \[0, 2\]"),
    ],
)
def test_bad_settings_fail_at_construction_with_the_bound(
    make: Callable[[float], object], value: float, bound: str
) -> None:
    with pytest.raises(ValueError, match=bound):
        make(value)


def test_bad_settings_fail_in_the_learner_config() -> None:
    with pytest.raises(ValueError, match=r"epsilon\) must be in \[0, 1\]"):
        LearnerConfig(n_features=2, n_actions=3, explorer="epsilon_greedy", explorer_parameter=1.5)
    with pytest.raises(ValueError, match="explorer_exponent"):
        LearnerConfig(n_features=2, n_actions=3, explorer_exponent=3.0)
    with pytest.raises(ValueError, match="explorer must be one of"):
        make_explorer("thompson")


@pytest.mark.parametrize(
    "explorer",
    [
        EpsilonGreedy(0.3),
        EpsilonGreedy(1.0, exponent=1 / 3),
        SquareCB(10.0, 0.5),
        SquareCB(0.0, 0.0),
        FastCB(50.0, 0.5),
    ],
    ids=lambda e: e.name,
)
@settings(max_examples=60, deadline=None)
@given(scores=scores_strategy, t=st.integers(0, 10**6), u=st.floats(0.0, 1.0, exclude_max=True))
def test_python_float_pmf_and_decision_equal_the_numpy_ones(
    explorer: EpsilonGreedy | SquareCB | FastCB, scores: np.ndarray, t: int, u: float
) -> None:
    """``pmf_list`` (what a single decision uses for few actions) gives the very numbers
    of ``explorer(scores)`` and of its batched ``rows``; ``explore_and_sample`` plays the
    action ``sample_action`` draws, with its pmf entry as the propensity."""
    pmf = explorer(scores, t)
    best = int(np.argmax(scores))
    assert explorer.pmf_list(scores.tolist(), best, t) == pmf.tolist()
    assert explorer.rows(scores[None, :], t)[0].tolist() == pmf.tolist()
    action, propensity, greedy = explore_and_sample(explorer, scores, t, u)
    assert (action, propensity, greedy) == (sample_action(pmf, u), float(pmf[action]), best)


def test_explore_and_sample_takes_the_numpy_pmf_for_many_actions_or_other_explorers() -> None:
    rng = np.random.default_rng(4)
    for explorer, k in ((SquareCB(), 100), (Softmax(0.2), 5)):
        scores = rng.uniform(size=k)
        for u in rng.uniform(size=50):
            pmf = explorer(scores, 9)
            action, propensity, greedy = explore_and_sample(explorer, scores, 9, u)
            assert action == sample_action(pmf, u) and propensity == pmf[action]
            assert greedy == int(np.argmax(scores))
