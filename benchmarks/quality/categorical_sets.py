"""The categorical sets of :mod:`benchmarks.quality.bandit_vs_vw`: schemas, JSON contexts, VW text.

banditree's default gets the schema (``NAME.features.json``: integer codes declared
categorical) and the rows as JSON objects; VW gets the same columns with each
categorical one as a one-hot name (``f3=2``) and each numeric one as ``f0:1.5``.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from banditree.datasets import CATEGORICAL, Dataset, feature_types
from banditree.features.tables import row_contexts, schema_from_columns

#: the sets of the categorical table: the mostly categorical ones and four of the
#: numeric table's sets whose declared categories the numeric table reads as numbers
CATEGORICAL_SETS = (*CATEGORICAL, "nursery", "krkopt", "fars", "coil2000")


def schema_json(ds: Dataset, max_categories: int | None = None) -> dict[str, Any]:
    """The schema of ``ds`` (declared types, vocabularies from the training split)."""
    types = feature_types(ds.name)
    columns = {name: ds.X_train[:, j] for j, name in enumerate(ds.feature_names)}
    extra = {} if max_categories is None else {"max_categories": max_categories}
    return schema_from_columns(columns, types, **extra).to_json()


def contexts(ds: Dataset, x: np.ndarray) -> list[dict[str, Any]]:
    """JSON contexts of rows of ``ds``'s features."""
    return row_contexts(ds.feature_names, x)


def categorical_mask(ds: Dataset) -> np.ndarray:
    """True for the declared categorical columns of ``ds``."""
    types = feature_types(ds.name)
    return np.array([types.get(name) == "categorical" for name in ds.feature_names])


def vw_features(x: np.ndarray, mask: np.ndarray) -> list[str]:
    """VW feature text per row: ``fJ=CODE`` for a categorical column, ``fJ:value`` else."""
    out = []
    for row in x.tolist():
        parts = []
        for j, v in enumerate(row):
            if mask[j]:
                parts.append(f"f{j}={int(v) if float(v).is_integer() else v}")
            elif v != 0.0:
                parts.append(f"f{j}:{v!r}")
        out.append(" ".join(parts))
    return out
