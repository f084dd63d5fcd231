"""A tick's decisions by the compiled kernel are the numpy reference's (same event ids)."""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from banditree.core.columns import DecisionColumns
from banditree.learners import InvalidInput
from banditree.learners.gradient_bandit import GradientBandit
from tests.kernel.pairs import assert_same_columns, feedbacks, pair

#: (name, config): the tree and the forest, every explorer and link, both tasks, and the
#: sizes at the edges (2 and 1,000 actions, 1 and 1,000 features)
CONFIGS: dict[str, dict[str, Any]] = {
    "default": {"n_features": 6, "n_actions": 4},
    "sigmoid-epsilon": {
        "n_features": 5, "n_actions": 3, "reward_link": "sigmoid",
        "explorer": "epsilon_greedy", "explorer_parameter": 0.2,
    },
    "softmax": {"n_features": 4, "n_actions": 5, "explorer": "softmax", "explorer_parameter": 0.05},
    "squarecb": {"n_features": 3, "n_actions": 2, "explorer": "squarecb", "height": 2},
    "no-clip-no-linear": {"n_features": 4, "n_actions": 3, "context_clip": 0, "linear_term": False},
    "forest-vote": {"kind": "dgt_forest", "n_features": 4, "n_actions": 3, "n_trees": 3, "height": 3},
    "forest-average": {
        "kind": "dgt_forest", "n_features": 4, "n_actions": 3, "n_trees": 2,
        "aggregate": "average", "linear_term": True,
    },
    "one-feature": {"n_features": 1, "n_actions": 2, "height": 1},
    "1000-features": {"n_features": 1000, "n_actions": 2, "height": 4},
    "1000-actions": {"n_features": 3, "n_actions": 1000, "height": 3, "explorer": "squarecb"},
    "regression-one-point": {"task": "regression", "n_features": 4, "estimator": "one_point"},
    "regression-two-point": {
        "task": "regression", "n_features": 3, "estimator": "two_point", "kind": "dgt",
    },
}  # fmt: skip


@cache
def trained(name: str) -> tuple[GradientBandit, GradientBandit]:
    """The pair of ``CONFIGS[name]`` after a few chunks of feedback (identical states)."""
    native, reference = pair({**CONFIGS[name], "seed": 7})
    rng = np.random.default_rng(1)
    d = native.n_features
    for chunk in range(6):
        x = rng.normal(loc=1.0, scale=2.0, size=(24, d))
        ids = [f"warm-{chunk}-{i}" for i in range(24)]
        columns = reference.act_columns(x, ids)
        losses = feedbacks(reference, columns, rng)
        for learner in (native, reference):
            learner.learn_batch(columns.rows(), losses)
    return native, reference


#: finite floats up to 1e300 and their negatives, zeros, tiny ones
FINITE = st.one_of(
    st.floats(-1e300, 1e300, allow_nan=False, allow_infinity=False),
    st.sampled_from([0.0, -0.0, 1e300, -1e300, 5e-324, 1.0, -1.0]),
)
ANY = st.one_of(FINITE, st.sampled_from([float("nan"), float("inf"), -float("inf")]))


@pytest.mark.parametrize("name", list(CONFIGS))
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_a_tick_decides_as_the_reference(name: str, data: st.DataObject) -> None:
    native, reference = trained(name)
    d = native.n_features
    rows = data.draw(st.integers(0, 6), label="rows")
    cells = data.draw(st.lists(FINITE, min_size=rows * d, max_size=rows * d), label="cells")
    x = np.array(cells, dtype=np.float64).reshape(rows, d)
    ids = [data.draw(st.text(max_size=12), label="id") + f"#{i}" for i in range(rows)]
    assert_same_columns(native.act_columns(x, ids), reference.act_columns(x, ids))
    # one context a call (``act``): the same decisions as the tick's
    one_by_one = [
        DecisionColumns.from_decisions([m.act(row, i) for row, i in zip(x, ids, strict=True)])
        for m in (native, reference)
    ]
    if rows:
        assert_same_columns(*one_by_one)


@pytest.mark.parametrize("name", ["default", "forest-vote", "regression-one-point"])
@settings(max_examples=25, deadline=None)
@given(data=st.data())
def test_a_non_finite_context_is_refused_alike(name: str, data: st.DataObject) -> None:
    native, reference = trained(name)
    d = native.n_features
    cells = data.draw(st.lists(ANY, min_size=2 * d, max_size=2 * d))
    x = [cells[:d], cells[d:]]
    outcomes = []
    for learner in (native, reference):
        try:
            outcomes.append(learner.act_columns(x, ["a", "b"]))
        except InvalidInput as err:
            outcomes.append(str(err))
    if isinstance(outcomes[1], str):
        assert outcomes[0] == outcomes[1]
    else:
        assert not isinstance(outcomes[0], str)
        assert_same_columns(outcomes[0], outcomes[1])


def test_the_schedule_and_the_sample_follow_the_learner() -> None:
    """Rounds learned move the explorer's schedule (SquareCB's gamma); the event id alone
    fixes the uniform: the same id, the same action, in any batch."""
    native, reference = trained("1000-actions")
    x = np.random.default_rng(3).normal(size=(50, 3))
    ids = [f"event-{i}" for i in range(50)]
    whole = native.act_columns(x, ids)
    assert_same_columns(whole, reference.act_columns(x, ids))
    alone = [native.act_columns(x[i : i + 1], [ids[i]]).action for i in range(50)]
    assert [a[0] for a in alone if a is not None] == whole.action
    assert len(set(whole.action or [])) > 10  # 1,000 actions explored, not one


class _Counting:
    """The compiled module, counting its entry points' calls."""

    def __init__(self, module: Any) -> None:
        self.module, self.calls = module, {"decide": 0, "window_gradients": 0}

    def __getattr__(self, name: str) -> Any:
        def call(*args: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            return getattr(self.module, name)(*args)

        return call


@pytest.mark.parametrize("name", list(CONFIGS))
def test_every_config_here_decides_in_the_kernel(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """No silent numpy path: each config's tick is one call of the kernel's ``decide``,
    and a classification tree's chunk of feedback one ``learn_chunk``."""
    from banditree import kernel
    from banditree.learners.gradient_bandit import decide, learn

    counting = _Counting(kernel.native())
    monkeypatch.setattr(decide, "native", lambda: counting)
    monkeypatch.setattr(learn, "native", lambda: counting)
    native, _ = pair({**CONFIGS[name], "seed": 1})
    x = np.zeros((3, native.n_features))
    columns = native.act_columns(x, ["a", "b", "c"])
    assert counting.calls["decide"] == 1
    rng = np.random.default_rng(0)
    native.learn_batch(columns.rows(), feedbacks(native, columns, rng))
    tree_classification = native.task == "classification" and CONFIGS[name].get("kind") is None
    assert counting.calls.get("learn_chunk", 0) == (1 if tree_classification else 0)
    assert counting.calls["window_gradients"] == 0


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(-(2**70), 2**70), ids=st.lists(st.text(max_size=300), max_size=8))
def test_event_uniforms_are_hashlibs(seed: int, ids: list[str]) -> None:
    """The kernel's BLAKE2b gives the uniforms of ``hashlib.blake2b`` bit for bit (ids of
    any length: one block, several, and the block boundaries)."""
    from banditree import kernel
    from banditree.explore import event_uniform_rows

    got = kernel.event_uniform_rows(kernel.native(), seed, ids)
    assert got.tobytes() == event_uniform_rows(seed, ids).reshape(-1, 2).tobytes()
    for size in (111, 112, 127, 128, 129, 255, 256, 257):
        text = "e" * size
        assert kernel.event_uniform_rows(kernel.native(), seed, [text]).tobytes() == (
            event_uniform_rows(seed, [text]).tobytes()
        )
