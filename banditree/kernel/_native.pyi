"""Types of the compiled module (``_native.c``); the arrays are numpy arrays, checked there."""

from typing import Any

def decide(
    x: Any,
    mean: Any,
    inv_scale: Any,
    clip: float,
    weights: Any,
    theta: Any,
    linear: Any,
    aggregate: int,
    sigmoid: int,
    explorer: int,
    param: float,
    uniforms: Any,
    action: Any,
    propensity: Any,
    greedy: Any,
    leaf: Any,
    output: Any,
    scores: Any,
    /,
) -> None: ...
def window_gradients(
    x: Any,
    actions: Any,
    propensity: Any,
    loss: Any,
    weights: Any,
    theta: Any,
    bias: Any,
    linear: Any,
    sigmoid: int,
    cap: float,
    aware: int,
    grad_weights: Any,
    grad_theta: Any,
    grad_bias: Any,
    grad_linear: Any,
    /,
) -> None: ...
def ridge_rows(
    x: Any,
    actions: Any,
    rewards: Any,
    inv_gram: Any,
    weights: Any,
    mix_stats: Any,
    prior: Any,
    mixing: bool,
    /,
) -> int: ...
def rmsprop(
    param: Any,
    grad: Any,
    square_avg: Any,
    new: Any,
    alpha: float,
    eps: float,
    rate: float,
    adagrad: bool,
    first: bool,
    /,
) -> bool: ...
def event_uniforms(prefix: bytes, event_ids: list[str], out: Any, /) -> None: ...
def welford(mean: Any, m2: Any, count: int, rows: Any, mean_out: Any, m2_out: Any, /) -> None: ...
