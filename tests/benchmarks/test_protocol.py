"""The protocol's split of the bundled sets: fixed, reproducible, stratified."""

from __future__ import annotations

from banditree.datasets import CLASSIFICATION, load
from benchmarks.protocol import CHECK, TUNING, draw_split, half_of


def test_the_written_split_is_the_seeded_draw_over_the_bundled_sets() -> None:
    meta = []
    for name in CLASSIFICATION:
        ds = load(name)
        meta.append((name, len(ds.y_train), ds.n_classes))
    assert draw_split(meta) == (TUNING, CHECK)
    assert sorted(TUNING + CHECK) == sorted(CLASSIFICATION)
    assert len(TUNING) == len(CHECK) == 7
    # stratified: each half holds a binary set and a set of more than ten classes
    classes = {name: k for name, _, k in meta}
    for half in (TUNING, CHECK):
        assert min(classes[d] for d in half) == 2 and max(classes[d] for d in half) > 10


def test_each_set_has_one_half() -> None:
    assert half_of("letter") == "check" and half_of("satimage") == "tuning"
    assert half_of("river_bananas") == "external" and half_of("wine") == "other"
    assert half_of("letter", categorical=True) == "categorical"
