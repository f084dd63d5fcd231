"""Data files as people have them: CSV / TSV (plain or gzip) and Parquet with string,
boolean and categorical-dtype columns and missing cells.

A table whose feature columns are all numbers, with no declared categories, becomes
the plain numeric :class:`~banditree.datasets.Dataset` it always was.  Otherwise the
dataset keeps the raw values (an object array, missing cells as None) and carries a
feature schema (:func:`banditree.features.tables.schema_from_columns`, vocabularies
from the training split): its learners get ``features`` and JSON contexts.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

from banditree.datasets import Dataset, encode_labels, stratified_split
from banditree.features.tables import row_contexts, schema_from_columns

TEST_FRACTION = 0.2
TABLE_SUFFIXES = (".csv", ".tsv", ".csv.gz", ".tsv.gz", ".parquet", ".pq")


def is_table(path: Path) -> bool:
    """True for a file :func:`read_frame` reads."""
    return path.name.endswith(TABLE_SUFFIXES)


def read_frame(path: Path) -> Any:
    """A pandas frame of a CSV / TSV (``.gz`` too) or Parquet file."""
    import pandas as pd

    if path.name.endswith((".parquet", ".pq")):
        return pd.read_parquet(path)
    sep = "\t" if path.name.endswith((".tsv", ".tsv.gz")) else ","
    # keep_default_na with no extra values: empty cells and NA spellings are missing
    return pd.read_csv(path, sep=sep)


def read_schema_file(path: Path) -> tuple[dict[str, Any], str | None]:
    """A schema file: ``{"features": {...}}`` (a feature schema, or the bundled sets'
    ``{"label": ..., "features": {column: "categorical" | "numeric"}}``); its label."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as err:
        raise ValueError(f"--schema {path}: not a readable JSON file ({err})") from None
    if not isinstance(data, dict) or "features" not in data:
        raise ValueError(f'--schema {path}: needs a "features" object')
    label = data.get("label")
    return data, label if isinstance(label, str) else None


def _column_values(column: Any) -> list[Any]:
    """A frame column's values as Python objects, missing cells as None."""
    import pandas as pd

    values = column.astype(object).tolist()
    return [None if v is None or (not isinstance(v, str) and pd.isna(v)) else v for v in values]


def table_dataset(
    name: str,
    frame: Any,
    label: str,
    *,
    task: str,
    seed: int = 0,
    categorical: Sequence[str] = (),
    types: dict[str, Any] | None = None,
) -> Dataset | None:
    """The dataset of a frame with a schema, or None where the plain numeric path applies.

    ``types``: declared types by column (a schema file's ``features``); ``categorical``:
    columns declared categorical (integer codes).  Rows whose label is missing are
    refused with :class:`ValueError`.
    """
    import pandas as pd

    if label not in frame.columns:
        raise ValueError(
            f"--label {label!r} is not a column of {name} (columns: {list(frame.columns)[:8]}...)"
        )
    features = frame.drop(columns=[label])
    numeric = all(pd.api.types.is_numeric_dtype(features[c]) for c in features.columns)
    numeric = numeric and not any(pd.api.types.is_bool_dtype(features[c]) for c in features.columns)
    if numeric and not categorical and not types and not features.isna().any().any():
        return None
    missing_columns = sorted(set(categorical) - set(map(str, features.columns)))
    if missing_columns:
        raise ValueError(f"--categorical: not a feature column: {', '.join(missing_columns[:5])}")
    if frame[label].isna().any():
        raise ValueError(f"{name}: the label column {label!r} has missing cells")
    names = [str(c) for c in features.columns]
    X = np.empty((len(frame), len(names)), dtype=object)
    for j, c in enumerate(features.columns):
        X[:, j] = _column_values(features[c])
    y_raw = frame[label].to_numpy()
    if task == "classification":
        y = encode_labels(y_raw.astype(str) if y_raw.dtype == object else y_raw)
        tr, te = stratified_split(y, TEST_FRACTION, seed)
    else:
        y = y_raw.astype(np.float64)
        order = np.random.default_rng(seed).permutation(len(y))
        n_test = round(len(y) * TEST_FRACTION)
        te, tr = order[:n_test], order[n_test:]
    simple = {k: v for k, v in (types or {}).items() if isinstance(v, str)}
    full = {k: v for k, v in (types or {}).items() if not isinstance(v, str)}
    schema = schema_from_columns(
        {n: X[tr, j] for j, n in enumerate(names)}, simple, categorical
    ).to_json()
    if full:  # declared full specs (vocabularies, bounds) replace the inferred ones
        by_name = {f["name"]: f for f in schema["features"]}
        by_name.update({k: {"name": k, **v} for k, v in full.items()})
        schema["features"] = list(by_name.values())
    return Dataset(name, task, X[tr], y[tr], X[te], y[te], tuple(names), schema)


def contexts_of(ds: Dataset, X: np.ndarray) -> np.ndarray:
    """Rows of a dataset with a schema as a 1-d object array of JSON contexts."""
    out = np.empty(len(X), dtype=object)
    out[:] = row_contexts(ds.feature_names, X)
    return out


def with_schema_types(ds: Dataset, types: dict[str, str]) -> Dataset:
    """A bundled numeric dataset read with declared feature types (its features file)."""
    X_train = ds.X_train.astype(object)
    X_test = ds.X_test.astype(object)
    columns = {n: X_train[:, j] for j, n in enumerate(ds.feature_names)}
    schema = schema_from_columns(columns, types).to_json()
    return replace(ds, X_train=X_train, X_test=X_test, schema=schema)


def training_sized(ds: Dataset) -> Dataset:
    """A dataset with a schema whose categorical vocabularies cover its training split.

    Online, a vocabulary is bounded (the
    :data:`~banditree.features.tables.TABLE_MAX_CATEGORIES` most frequent training values of
    a file's column get a column each, the rest share "other") because the values to come
    are unknown.  A supervised trainer sees every training value up front, so a feature cut
    at that bound gets every training value, most frequent first (at most
    :data:`~banditree.features.schema.MAX_CATEGORIES`): the columns one-hot encoding by hand
    would give.  Features within the bound, and declared vocabularies that are not the
    training split's most frequent values, are left as they are.
    """
    from banditree.features import FeatureSchema
    from banditree.features.encoder import category_key
    from banditree.features.schema import DEFAULT_MAX_CATEGORIES, MAX_CATEGORIES
    from banditree.features.tables import TABLE_MAX_CATEGORIES, is_missing

    assert ds.schema is not None
    schema = FeatureSchema.model_validate(ds.schema)
    names = list(ds.feature_names)
    widened: dict[str, list[str]] = {}
    for name, spec in schema.features.items():
        if spec.type != "categorical" or name not in names or spec.max_categories is not None:
            continue
        held = spec.values
        if held is not None and len(held) != TABLE_MAX_CATEGORIES:
            continue  # a whole vocabulary (or a declared one): nothing was cut
        column = ds.X_train[:, names.index(name)].tolist()
        counts = Counter(category_key(v, name) for v in column if not is_missing(v))
        ranked = sorted(counts, key=lambda k: (-counts[k], k))[:MAX_CATEGORIES]
        if held is not None and ranked[: len(held)] != held:
            continue  # declared, not the training split's most frequent values
        if len(ranked) > (len(held) if held is not None else DEFAULT_MAX_CATEGORIES):
            widened[name] = ranked
    if not widened:
        return ds
    features = {
        name: spec.model_copy(update={"values": widened[name]}) if name in widened else spec
        for name, spec in schema.features.items()
    }
    return replace(ds, schema=schema.model_copy(update={"features": features}).to_json())


def fitted_encoder(ds: Dataset) -> Any:
    """The :class:`~banditree.features.FeatureEncoder` of a dataset with a schema, having
    learned its training split (the view :func:`encoded` encodes with)."""
    from banditree.features import FeatureEncoder, FeatureSchema

    assert ds.schema is not None
    encoder = FeatureEncoder(FeatureSchema.model_validate(ds.schema))
    for context in contexts_of(ds, ds.X_train):
        encoder.update(context)
    encoder.publish()
    return encoder


def encoder_json(encoder: Any) -> dict[str, Any]:
    """A fitted encoder's state as JSON (what a ``train`` model file carries)."""
    tensors, meta = encoder.state()
    return {**{k: v.tolist() for k, v in tensors.items()}, **meta}


def encoded(ds: Dataset, encoder: Any = None) -> Dataset:
    """A dataset with a schema as the float columns its encoder makes (one-hot categories,
    missing indicators, imputed numbers), the encoder (``encoder``, else
    :func:`fitted_encoder` of :func:`training_sized`) having learned the training split:
    what a supervised trainer reads.  The schema (sized, if so) stays on the dataset."""
    if encoder is None:
        ds = training_sized(ds)
        encoder = fitted_encoder(ds)
    train = list(contexts_of(ds, ds.X_train))
    test = list(contexts_of(ds, ds.X_test))
    return replace(ds, X_train=encoder.encode_many(train), X_test=encoder.encode_many(test))
