"""The benchmark protocol: the bundled classification sets split into a tuning and a check half.

Defaults are chosen on :data:`TUNING` only; a change to the defaults is judged on
:data:`CHECK`, the external sets (:data:`benchmarks.external_sets.EXTERNAL`) and the
categorical table (:data:`benchmarks.categorical_sets.CATEGORICAL_SETS`), none of which a
tuning run may read.  Every quality report prints the halves apart, each with its own
geometric mean (:func:`half_of`).

The split was drawn once (issue 44), before any run of the rivals, by
:func:`draw_split`: the 14 sets sorted by number of classes (then training rows) form
seven neighbouring pairs, and a coin of ``numpy.random.default_rng(44)`` per pair sends
one of them to each half, so that both halves hold binary, few-class and many-class
sets, small and large.  The draw is kept as written constants, and a test checks that
it reproduces them; it is never redrawn.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np

#: the seed of the one draw (the issue's number)
SPLIT_SEED = 44
#: the half defaults are chosen on
TUNING = ("coil2000", "waveform_40", "satimage", "segmentation", "optdigits", "pendigits", "krkopt")
#: the half changes to the defaults are judged on
CHECK = ("spambase", "nursery", "page_blocks", "shuttle", "fars", "texture", "letter")
#: the order halves are printed in
HALVES = ("tuning", "check", "external", "categorical", "other")


def draw_split(
    sets: Iterable[tuple[str, int, int]], seed: int = SPLIT_SEED
) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The (tuning, check) halves of ``(name, training rows, classes)`` (an even number).

    Examples
    --------
    >>> draw_split([("a", 10, 2), ("b", 20, 2), ("c", 10, 5), ("d", 10, 9)], seed=0)
    (('b', 'd'), ('a', 'c'))
    """
    ordered = sorted(sets, key=lambda s: (s[2], s[1], s[0]))
    if len(ordered) % 2:
        raise ValueError(f"an even number of sets is split, got {len(ordered)}")
    rng = np.random.default_rng(seed)
    tuning, check = [], []
    for first, second in zip(ordered[::2], ordered[1::2], strict=True):
        if rng.integers(2):
            first, second = second, first
        tuning.append(first[0])
        check.append(second[0])
    return tuple(tuning), tuple(check)


def half_of(dataset: str, categorical: bool = False) -> str:
    """``tuning``, ``check``, ``external``, ``categorical`` (the categorical table) or
    ``other``."""
    from benchmarks.external_sets import EXTERNAL

    if categorical:
        return "categorical"
    if dataset in TUNING:
        return "tuning"
    if dataset in CHECK:
        return "check"
    return "external" if dataset in EXTERNAL else "other"
