"""A ranking model's exploration as a Vowpal Wabbit argument string, and back.

Personalizer described its learning settings (its "policy") as VW arguments
(``--cb_explore_adf --epsilon 0.2 ...``).  A banditree ranking model's learner is its
own (a ridge and a hard tree over context and candidate features), so of VW's arguments
only the exploration maps: ``--epsilon`` (epsilon-greedy), ``--squarecb`` with
``--gamma_scale`` / ``--gamma_exponent``, ``--softmax`` with ``--lambda`` (the inverse of
banditree's temperature) and banditree's own ``--fastcb`` (no VW counterpart: an
inverse-gap weighting reweighted by the greedy candidate's predicted loss) and
``--explorer_exponent`` (banditree's: epsilon and temperature decay as
``(1 + t)^-exponent``).  Every other argument is refused with the reason, never ignored.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import dataclass

#: arguments that state what banditree does anyway (ADF contextual bandit, DSJson input)
NEUTRAL = frozenset({"--cb_explore_adf", "--dsjson"})
#: why common VW arguments have no counterpart
REASONS = {
    "-q": "banditree crosses every context feature with every candidate feature itself "
    "(options.crosses); VW's interactions cannot be chosen",
    "--quadratic": "banditree crosses context and candidate features itself (options.crosses)",
    "--interactions": "banditree crosses context and candidate features itself (options.crosses)",
    "--cb_type": "banditree learns a reward regressor of its own (ridge and tree); VW's "
    "cost estimators do not apply",
    "-l": "the learning rate is part of the model's config, set when the model is created "
    "(learning_rate at PUT /v1/models/{name})",
    "--learning_rate": "the learning rate is set when the model is created (learning_rate)",
    "--power_t": "banditree's step size schedule is its own",
    "-b": "banditree does not hash features into VW's weight table",
    "--bit_precision": "banditree does not hash features into VW's weight table",
    "--first": "explore-first has no banditree explorer",
    "--bag": "bagging explorers have no banditree counterpart",
    "--cover": "online cover has no banditree explorer",
    "--regcb": "RegCB has no banditree explorer",
    "--regcbopt": "RegCB has no banditree explorer",
    "--synthcover": "synthetic cover has no banditree explorer",
    "--rnd": "RND exploration has no banditree explorer",
}
#: the VW argument that picks each banditree explorer ("" for epsilon-greedy: --epsilon)
_FLAG = {"squarecb": "--squarecb", "softmax": "--softmax", "fastcb": "--fastcb"}
#: the largest value of an argument (the config's bound on ``explorer_parameter``)
MAX_VALUE = 1e6
_VALUED = {"--epsilon", "--gamma_scale", "--gamma_exponent", "--lambda", "--explorer_exponent"}


@dataclass(frozen=True)
class ExplorerSettings:
    """A ranking model's ``explorer``, ``explorer_parameter`` and ``explorer_exponent``."""

    explorer: str
    parameter: float | None = None
    exponent: float | None = None


def policy_arguments(settings: ExplorerSettings) -> str:
    """The VW argument string of ``settings`` (parsed back by :func:`parse_policy_arguments`).

    Examples
    --------
    >>> policy_arguments(ExplorerSettings("epsilon_greedy", 0.2))
    '--cb_explore_adf --epsilon 0.2'
    >>> policy_arguments(ExplorerSettings("softmax", 0.5))
    '--cb_explore_adf --softmax --lambda 2'
    """
    parts = ["--cb_explore_adf"]
    p, x = settings.parameter, settings.exponent
    if settings.explorer == "epsilon_greedy":
        parts += ["--epsilon", _number(0.3 if p is None else p)]
        if x:
            parts += ["--explorer_exponent", _number(x)]
    elif settings.explorer == "softmax":
        temperature = 0.1 if p is None else p
        if temperature <= 0:
            raise ValueError("softmax with temperature 0 (greedy) has no VW --lambda")
        parts += ["--softmax", "--lambda", _number(1.0 / temperature)]
        if x:
            parts += ["--explorer_exponent", _number(x)]
    elif settings.explorer in ("squarecb", "fastcb"):
        parts.append(_FLAG[settings.explorer])
        if p is not None:
            parts += ["--gamma_scale", _number(p)]
        if x is not None:
            parts += ["--gamma_exponent", _number(x)]
    else:
        raise ValueError(f"explorer {settings.explorer!r} has no VW argument")
    return " ".join(parts)


def _number(value: float) -> str:
    return f"{value:.10g}"


def parse_policy_arguments(arguments: str) -> ExplorerSettings:
    """The explorer settings a VW argument string asks for.

    Raises ``ValueError`` naming the first argument that has no banditree counterpart
    (and why), a missing or bad value, or two explorers at once.

    Examples
    --------
    >>> parse_policy_arguments("--cb_explore_adf --epsilon 0.05")
    ExplorerSettings(explorer='epsilon_greedy', parameter=0.05, exponent=None)
    >>> parse_policy_arguments("--cb_explore_adf --bag 5")
    Traceback (most recent call last):
    ValueError: arguments: '--bag' is not accepted: bagging explorers have no banditree counterpart
    """
    try:
        words = shlex.split(arguments)
    except ValueError as err:
        raise ValueError(f"arguments: cannot be split into words ({err})") from None
    values: dict[str, float] = {}
    chosen: list[str] = []
    i = 0
    while i < len(words):
        word = words[i]
        flag, _, inline = word.partition("=")
        if flag in NEUTRAL:
            i += 1
        elif flag in _FLAG.values():
            chosen.append(flag)
            i += 1
        elif flag in _VALUED:
            text = inline if inline else (words[i + 1] if i + 1 < len(words) else "")
            values[flag] = _value(flag, text)
            i += 1 if inline else 2
        else:
            reason = REASONS.get(flag, "it has no counterpart in a banditree ranking model")
            raise ValueError(f"arguments: {flag!r} is not accepted: {reason}")
    return _settings(chosen, values)


def _value(flag: str, text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise ValueError(f"arguments: {flag} needs a number, got {text!r}") from None
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"arguments: {flag} must be a finite number >= 0, got {text}")
    if value > MAX_VALUE:
        raise ValueError(f"arguments: {flag} must be <= {MAX_VALUE:g}, got {text}")
    return value


def _settings(chosen: list[str], values: dict[str, float]) -> ExplorerSettings:
    if "--epsilon" in values:
        chosen = [*chosen, "--epsilon"]
    if len(chosen) > 1:
        raise ValueError(f"arguments: one explorer at a time, got {' and '.join(chosen)}")
    if not chosen:
        raise ValueError(
            "arguments: name an explorer: --epsilon E, --squarecb, --softmax --lambda L or --fastcb"
        )
    explorer = chosen[0]
    gamma = {"--gamma_scale", "--gamma_exponent"} & values.keys()
    if gamma and explorer not in ("--squarecb", "--fastcb"):
        raise ValueError(f"arguments: {sorted(gamma)[0]} is for --squarecb or --fastcb")
    if "--lambda" in values and explorer != "--softmax":
        raise ValueError("arguments: --lambda is for --softmax")
    decay = values.get("--explorer_exponent")
    if decay is not None and explorer not in ("--epsilon", "--softmax"):
        raise ValueError("arguments: --explorer_exponent is for --epsilon or --softmax")
    if decay is not None and decay > 2:
        raise ValueError("arguments: --explorer_exponent must be in [0, 2]")
    if explorer == "--epsilon":
        epsilon = values["--epsilon"]
        if epsilon > 1:
            raise ValueError(f"arguments: --epsilon must be in [0, 1], got {epsilon:g}")
        return ExplorerSettings("epsilon_greedy", epsilon, decay)
    if explorer == "--softmax":
        if values.get("--lambda", 0.0) < 1 / MAX_VALUE:
            raise ValueError(f"arguments: --softmax needs --lambda L >= {1 / MAX_VALUE:g}")
        return ExplorerSettings("softmax", 1.0 / values["--lambda"], decay)
    if values.get("--gamma_exponent", 0.0) > 2:
        raise ValueError("arguments: --gamma_exponent must be in [0, 2]")
    name = "squarecb" if explorer == "--squarecb" else "fastcb"
    return ExplorerSettings(name, values.get("--gamma_scale"), values.get("--gamma_exponent"))
