"""Decision records and single-context checks: the behaviour the fast constructors keep."""

from __future__ import annotations

import dataclasses
import inspect

import numpy as np
import pytest

from banditree.learners import Decision, InvalidInput
from banditree.learners.validation import as_context, context_values
from banditree.models.spec import ModelOutput


@pytest.mark.parametrize("record", [Decision, ModelOutput])
def test_constructor_takes_the_fields_in_order_with_their_defaults(record: type) -> None:
    """The hand-written ``__init__`` keeps the dataclass signature: names, order, defaults."""
    params = list(inspect.signature(record.__init__).parameters.values())[1:]
    fields = dataclasses.fields(record)
    assert [p.name for p in params] == [f.name for f in fields]
    for param, f in zip(params, fields, strict=True):
        if f.default is not dataclasses.MISSING:
            assert param.default == f.default, f.name
        elif f.default_factory is not dataclasses.MISSING:
            assert param.default is None, f.name  # a fresh default per record
        else:
            assert param.default is inspect.Parameter.empty, f.name


def test_decision_is_a_frozen_record() -> None:
    d = Decision("e", (1.0, 2.0), 3, action=1, propensity=0.25, greedy_action=0, explored=True)
    assert d.extras == {} and d.value is None and d.perturbation == 0
    assert Decision("f", (1.0,), 0).extras is not Decision("g", (1.0,), 0).extras
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.action = 2  # type: ignore[misc]
    assert Decision.from_dict(d.to_dict()) == d
    assert dataclasses.replace(d, action=0) == Decision(
        "e", (1.0, 2.0), 3, action=0, propensity=0.25, greedy_action=0, explored=True
    )
    assert d != dataclasses.replace(d, propensity=0.5)
    assert "propensity=0.25" in repr(d)


@pytest.mark.parametrize(("action", "greedy", "leaf"), [(2, 2, None), (0, 1, 5)])
def test_of_action_is_the_keyword_constructor(action: int, greedy: int, leaf: int | None) -> None:
    """Every field, ``explored`` included, as ``Decision(..., action=...)`` sets it."""
    extras = {"reachable_leaves": 1.5}
    d = Decision.of_action("e", (1.0, -2.0), 7, action, 0.125, greedy, leaf, extras)
    want = Decision(
        "e",
        (1.0, -2.0),
        7,
        action=action,
        propensity=0.125,
        greedy_action=greedy,
        leaf=leaf,
        explored=action != greedy,
        extras=extras,
    )
    assert d == want and d.to_dict() == want.to_dict()
    assert d.explored is (action != greedy)
    with pytest.raises(dataclasses.FrozenInstanceError):
        d.action = 1  # type: ignore[misc]


def test_context_values_checks_as_as_context_and_returns_the_floats() -> None:
    x, values = context_values(np.array([1, 2.5, -3.0]), 3)
    assert x.dtype == np.float64 and values == [1.0, 2.5, -3.0]
    assert all(type(v) is float for v in values)
    huge = [1e308, 1e308, -1.0]  # finite numbers whose sum overflows: accepted
    assert context_values(huge, 3)[1] == huge
    np.testing.assert_array_equal(as_context(huge, 3), huge)
    for bad, index in (([1.0, np.inf, 0.0], 1), ([np.nan, 0.0, 0.0], 0)):
        for check in (as_context, context_values):
            with pytest.raises(InvalidInput, match=rf"context\[{index}\]: must be finite"):
                check(bad, 3)
    with pytest.raises(InvalidInput, match="must hold exactly 3 numbers"):
        context_values([1.0, 2.0], 3)
    with pytest.raises(InvalidInput, match="must be a list of 3 numbers"):
        context_values(["a", 1.0, 2.0], 3)
