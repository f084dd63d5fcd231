"""A ranking decision by the compiled kernel (``rank_decide``) is the numpy reference's:
the served scorer's scores and the learner's ``pick``, for the same event ids."""

from __future__ import annotations

import math
from functools import cache
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import banditree.ranking  # noqa: F401  (registers the ranking task)
from banditree import kernel
from banditree.core import Decision, Feedback
from banditree.features import InvalidInput
from banditree.learners import build_learner
from banditree.ranking import RankingModel
from banditree.ranking.served import ServedScorer
from tests.kernel.pairs import TOLERANCE
from tests.kernel.test_fuzz import RAISED, floats, hostile, mostly

module = kernel.native()

#: (name, (config, context features, candidate features)): every explorer, the tree and
#: none, crosses and none, the ramp and none, one feature a side, many, an empty context
CONFIGS: dict[str, tuple[dict[str, Any], int, int]] = {
    "default": ({"task": "ranking"}, 3, 3),
    "epsilon": ({"task": "ranking", "explorer": "epsilon_greedy", "explorer_parameter": 0.2}, 2, 2),
    "softmax": ({"task": "ranking", "explorer": "softmax", "explorer_parameter": 0.05}, 2, 3),
    "squarecb": ({"task": "ranking", "explorer": "squarecb", "height": 2}, 3, 2),
    "no-tree": ({"task": "ranking", "options": {"tree": False}}, 3, 3),
    "no-crosses-no-ramp": ({"task": "ranking", "options": {"crosses": False, "id_ramp": 0}}, 3, 3),
    "one-feature": ({"task": "ranking", "height": 1}, 1, 1),
    "many-features": ({"task": "ranking", "height": 5}, 40, 30),
    "empty-context": ({"task": "ranking"}, 0, 2),
}  # fmt: skip


def _context(values: list[float], dc: int) -> dict[str, Any]:
    return {f"c{j}": values[j] for j in range(dc)}


def _candidate(values: list[float], da: int, j: int) -> dict[str, Any]:
    features: dict[str, Any] = {f"a{i}": values[i] for i in range(da)}
    if da > 1:  # a categorical one too
        features["kind"] = "xyz"[j % 3]
    return features


@cache
def trained(name: str) -> tuple[RankingModel, RankingModel]:
    """``(native, reference)`` ranking models of ``CONFIGS[name]`` after the same 120
    learned decisions (learning is the same code for both: identical states)."""
    config, dc, da = CONFIGS[name]
    native, reference = build_learner({**config, "seed": 3}), build_learner({**config, "seed": 3})
    assert isinstance(native, RankingModel) and isinstance(reference, RankingModel)
    assert native._kernel is not None
    reference.use_reference()
    rng = np.random.default_rng(5)
    for t in range(120):
        context = _context(rng.normal(size=dc).tolist(), dc)
        n = int(rng.integers(2, 8))
        actions = [
            (f"item{int(rng.integers(0, 30))}-{j}", _candidate(rng.normal(size=da).tolist(), da, j))
            for j in range(n)
        ]
        decision = reference.rank(context, actions, f"warm-{t}")
        loss = float(rng.random())
        for model in (native, reference):
            model.learn(decision, Feedback(loss=loss))
    return native, reference


def assert_same(native: Decision, reference: Decision) -> None:
    """The same decision: the played and greedy candidates, the probabilities within 1e-12."""
    assert native.event_id == reference.event_id
    assert native.action == reference.action
    assert native.greedy_action == reference.greedy_action
    assert native.explored == reference.explored
    assert native.model_version == reference.model_version
    assert native.ranking is not None and reference.ranking is not None
    got, want = native.ranking["probabilities"], reference.ranking["probabilities"]
    assert all(type(p) is float for p in got)
    np.testing.assert_allclose(got, want, rtol=TOLERANCE, atol=TOLERANCE)
    assert native.propensity == pytest.approx(reference.propensity, rel=TOLERANCE, abs=TOLERANCE)
    assert {k: v for k, v in native.ranking.items() if k != "probabilities"} == {
        k: v for k, v in reference.ranking.items() if k != "probabilities"
    }


#: finite floats up to 1e300, zeros, tiny ones; NaN (read as missing by the encoder)
VALUES = st.one_of(
    st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1e300, -1e300, 5e-324, 1.0, -1.0, float("nan")]),
)


def _tied(model: RankingModel, context: Any, actions: list[tuple[str, Any]]) -> bool:
    """Whether two candidates' scores are within rounding of each other (the two paths
    may then pick either: their sums run in different orders)."""
    scores = np.sort(model.scores(context, [f for _, f in actions], [i for i, _ in actions]))
    gaps = np.diff(scores)
    return bool(len(gaps)) and bool((gaps <= 1e-9 * (1.0 + np.abs(scores[1:]))).any())


@pytest.mark.parametrize("name", list(CONFIGS))
@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_rank_decides_as_the_reference(name: str, data: st.DataObject) -> None:
    native, reference = trained(name)
    _, dc, da = CONFIGS[name]
    n = data.draw(st.sampled_from([2, 3, 10, 256]), label="candidates")
    context = _context(data.draw(st.lists(VALUES, min_size=dc, max_size=dc), label="c"), dc)
    cells = data.draw(st.lists(VALUES, min_size=da, max_size=da), label="a")
    actions = [(f"item{j}", _candidate(cells if j == 0 else [v * (j % 7) for v in cells], da, j))
               for j in range(n)]  # fmt: skip
    if n > 3:  # a realistic spread besides the drawn candidate
        rng = np.random.default_rng(n)
        actions[1:] = [(f"item{j}", _candidate(rng.normal(size=da).tolist(), da, j))
                       for j in range(1, n)]  # fmt: skip
    event_id = data.draw(st.text(max_size=12), label="event id") + "#r"
    if _tied(reference, context, actions):
        return
    before = (native.core.n_decisions, reference.core.n_decisions)  # type: ignore[union-attr]
    assert_same(native.rank(context, actions, event_id), reference.rank(context, actions, event_id))
    after = (native.core.n_decisions, reference.core.n_decisions)  # type: ignore[union-attr]
    assert after == (before[0] + 1, before[1] + 1)
    # a given uniform instead of the event id's, and the candidates sent again (cached)
    u = data.draw(st.floats(0.0, 1.0, exclude_max=True), label="u")
    assert_same(
        native.rank(context, actions, "again", uniform=u),
        reference.rank(context, actions, "again", uniform=u),
    )


@pytest.mark.parametrize("name", ["default", "many-features"])
def test_inputs_are_refused_alike(name: str) -> None:
    native, reference = trained(name)
    _, dc, da = CONFIGS[name]
    good = [(f"i{j}", _candidate([0.5] * da, da, j)) for j in range(3)]
    bad: list[tuple[Any, list[tuple[str, Any]]]] = [
        (_context([math.inf] * dc, dc), good),
        (_context([0.1] * dc, dc), [*good[:2], ("i2", _candidate([-math.inf] * da, da, 2))]),
        (_context([0.1] * dc, dc), [(f"i{j}", {"a0": 0.1}) for j in range(1000)]),  # > 256
        (_context([0.1] * dc, dc), [("i0", {"a0": "text"}), *good[1:]]),
        (_context([0.1] * dc, dc), [("i0", {"a0": 1.0}), ("i0", {"a0": 2.0})]),  # same id
    ]
    for context, actions in bad:
        errors = []
        for model in (native, reference):
            with pytest.raises(InvalidInput) as caught:
                model.rank(context, actions, "refused")
            errors.append((caught.value.field, str(caught.value)))
        assert errors[0] == errors[1]
    for uniform in (1.0, -0.5, math.nan):  # a given uniform outside [0, 1)
        for model in (native, reference):
            with pytest.raises(InvalidInput, match="uniform"):
                model.rank(_context([0.1] * dc, dc), good, "refused", uniform=uniform)


@pytest.mark.parametrize("name", ["default", "no-tree", "one-feature"])
@pytest.mark.parametrize("n", [2, 1000])
def test_the_scorer_decides_as_the_reference_over_1000_candidates(name: str, n: int) -> None:
    """The scorer alone (the model refuses more than 256): 2 and 1,000 candidates."""
    native, _ = trained(name)
    _, dc, da = CONFIGS[name]
    served = native._served()
    assert served.kernel is not None
    core = native.core
    assert core is not None
    reference = ServedScorer(core, native.context_encoder, native.action_encoder)
    rng = np.random.default_rng(n)
    for trial in range(5):
        context = _context(rng.normal(size=dc).tolist(), dc)
        ids = [f"x{j}" for j in range(n)]
        features = [_candidate((3.0 * rng.normal(size=da)).tolist(), da, j) for j in range(n)]
        scores = reference.scores(context, ids, features)
        event_id = f"big-{trial}"
        want = core.pick(scores, event_id)
        got = served.decide(context, ids, features, event_id)
        top = np.sort(scores)[-2:]
        if top[1] - top[0] > 1e-9:
            assert got[0] == want[0] and got[2] == want[2]
        np.testing.assert_allclose(got[1], want[1], rtol=TOLERANCE, atol=TOLERANCE)


def test_apprentice_mode_plays_the_baseline_with_the_kernel_built() -> None:
    model = build_learner({"task": "ranking", "mode": "apprentice"})
    assert isinstance(model, RankingModel) and model._kernel is not None
    actions = [("a", {"x": 1.0}), ("b", {"x": 2.0})]
    decision = model.rank({"u": 1.0}, actions, "e0", baseline="b")
    model.learn(decision, Feedback(loss=0.0))
    again = model.rank({"u": 1.0}, actions, "e1", baseline="b")
    assert again.action == 1 and again.propensity == 1.0


def test_a_context_of_no_features_is_served() -> None:
    """Before, a model whose context named no feature failed once it had learned (a
    reshape of the empty context map)."""
    for use_reference in (False, True):
        model = build_learner({"task": "ranking"})
        assert isinstance(model, RankingModel)
        if use_reference:
            model.use_reference()
        actions = [("a", {"x": 1.0}), ("b", {"x": 2.0})]
        model.learn(model.rank({}, actions, "e0"), Feedback(loss=0.5))
        decision = model.rank({}, actions, "e1")
        assert decision.ranking is not None
        assert sum(decision.ranking["probabilities"]) == pytest.approx(1.0)


# -- the entry point under hostile arguments --------------------------------------------

N, DC, DA, H = 4, 3, 2, 2
COLS = (1 << H) + 1
RAN = {"rank_decide": 0}


def mostly_finite(shape: tuple[int, ...]) -> st.SearchStrategy[np.ndarray]:
    """Finite numbers in ``[-3, 3)`` three times in four, else :func:`floats` (NaN,
    infinities, 1e300 among them): the checked inputs, refused whole when one is not
    finite, would otherwise let few calls run."""
    size = int(np.prod(shape))
    finite = st.lists(st.floats(-3.0, 3.0, exclude_max=True), min_size=size, max_size=size)
    sane = finite.map(lambda v: np.array(v, dtype=np.float64).reshape(shape))
    return st.integers(0, 3).flatmap(lambda i: floats(shape) if i == 0 else sane)


def rarely_hostile(strategy: st.SearchStrategy[np.ndarray]) -> st.SearchStrategy[Any]:
    """:func:`then_hostile` wrong one time in 24: the call has a dozen arrays."""
    return strategy.flatmap(lambda valid: hostile(valid, 23))


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    data=st.data(),
    clip=mostly([3.0, 1e300], [0.0, -1.0, float("nan"), float("inf")]),
    height=mostly([0, H], [-1, 17, 2**31 - 1]),
    explorer=mostly([0, 1, 2, 3], [-1, 4]),
    param=mostly([0.1, 0.3, 1.0, 50.0], [-1.0, float("nan"), float("inf"), 1e300]),
    draw=mostly([(b"0:", "event"), (b"", None)], [(b"0:", 7), (b"", "\ud800"), (b"", None)]),
    u=mostly([0.0, 0.5, 0.999], [1.0, -0.1, float("nan")]),
)
def test_rank_decide_raises_or_decides(
    data: st.DataObject,
    clip: float,
    height: int,
    explorer: int,
    param: float,
    draw: tuple[bytes, Any],
    u: float,
) -> None:
    cols = COLS if height == H else 1
    held = np.arange(0, (DA + 1) * cols, 2, dtype=np.int64)  # the columns of G given
    theta = None if height != H else data.draw(rarely_hostile(floats((1 << H,))), label="theta")
    scores = data.draw(st.one_of(st.none(), hostile(np.zeros(N), 23)), label="scores")
    args = [
        data.draw(rarely_hostile(mostly_finite((DC,))), label="c"),
        data.draw(rarely_hostile(floats((DC,))), label="c_mean"),
        data.draw(rarely_hostile(floats((DC,), 0.1, 3.0)), label="c_scale"),
        clip,
        data.draw(rarely_hostile(mostly_finite((N, DA + 2))), label="rows"),
        data.draw(rarely_hostile(floats((DC, held.size))), label="g"),
        data.draw(hostile(held, 23), label="g_columns"),
        data.draw(rarely_hostile(floats(((DA + 1) * cols,))), label="m0"),
        height, theta, explorer, param, draw[0], draw[1], u, scores,
    ]  # fmt: skip
    try:
        chosen, greedy, pmf = module.rank_decide(*args)
    except (*RAISED, UnicodeEncodeError):
        return
    RAN["rank_decide"] += 1
    assert 0 <= chosen < N and 0 <= greedy < N
    assert len(pmf) == N and all(type(p) is float for p in pmf)


@pytest.mark.parametrize(
    "columns", [[0, 0, 1], [2, 1, 3], [-1, 0, 1], [0, 1, (DA + 1) * COLS]], ids=str
)
def test_g_columns_out_of_order_or_range_are_refused(columns: list[int]) -> None:
    args = [
        np.zeros(DC), np.zeros(DC), np.ones(DC), 3.0, np.ones((N, DA + 2)),
        np.ones((DC, 3)), np.array(columns, dtype=np.int64), np.zeros((DA + 1) * COLS), H,
        np.zeros(1 << H), 3, 1.0, b"0:", "e", 0.0, None,
    ]  # fmt: skip
    with pytest.raises(ValueError, match="g_columns must increase strictly"):
        module.rank_decide(*args)


def test_the_fuzz_ran_calls_past_the_checks() -> None:
    assert RAN["rank_decide"] > 5, RAN
