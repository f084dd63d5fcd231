"""The staleness quantile the scale-out and staleness benchmarks read off a histogram."""

from __future__ import annotations

import math

from benchmarks.scale.scale_out import bucket_quantile, quantile_from_buckets
from benchmarks.scale.staleness_load import quantile


def test_a_quantile_is_linear_inside_its_bucket() -> None:
    buckets = [(0.1, 2.0), (1.0, 10.0), (math.inf, 10.0)]
    assert math.isclose(bucket_quantile(buckets, 0.5), 0.1 + 0.9 * 3 / 8)
    assert math.isclose(bucket_quantile(buckets, 0.1), 0.05)
    assert math.isnan(bucket_quantile([(0.1, 0.0), (math.inf, 0.0)], 0.5))  # nothing seen
    assert math.isnan(bucket_quantile([], 0.5))
    assert bucket_quantile([(0.1, 1.0), (math.inf, 4.0)], 0.99) == 0.1  # in +Inf: the bound


def test_the_two_benchmarks_read_the_same_quantile() -> None:
    text = (
        'banditree_model_staleness_seconds_bucket{model="m",le="0.1"} 2\n'
        'banditree_model_staleness_seconds_bucket{model="m",le="1.0"} 10\n'
        'banditree_model_staleness_seconds_bucket{model="m",le="+Inf"} 10\n'
    )
    after = [(0.1, 3.0), (1.0, 12.0), (math.inf, 12.0)]
    before = [(0.1, 1.0), (1.0, 2.0), (math.inf, 2.0)]  # the same 10 observations between
    assert math.isclose(quantile(before, after, 0.5), quantile_from_buckets(text, 0.5))
