"""Data sources (the simulator's and ``banditree train``'s): files, scikit-learn's bundled sets and banditree's own.

Every source becomes a :class:`banditree.datasets.Dataset` (train and test split,
class labels encoded ``0..K-1``).  A source without a test split gets a seeded
80/20 split (stratified for classification).
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any, Literal

import numpy as np

from banditree import datasets
from banditree.datasets import Dataset, encode_labels, read_tsv_gz, stratified_split
from banditree.datasets.tables import (
    is_table,
    read_frame,
    read_schema_file,
    table_dataset,
    with_schema_types,
)

TaskChoice = Literal["auto", "classification", "regression"]

#: scikit-learn's bundled (offline) sets and their task.
SKLEARN_SETS: dict[str, TaskChoice] = {
    "digits": "classification",
    "wine": "classification",
    "breast_cancer": "classification",
    "diabetes": "regression",
}
#: Largest number of distinct integer labels that ``task="auto"`` reads as classes.
AUTO_MAX_CLASSES = 100
TEST_FRACTION = 0.2


def known_names() -> list[str]:
    """Dataset names that need no file: banditree's bundled sets and scikit-learn's."""
    return [*datasets.CLASSIFICATION, *datasets.CATEGORICAL, *datasets.REGRESSION, *SKLEARN_SETS]


def infer_task(y: np.ndarray) -> str:
    """``classification`` for a few distinct integer-valued (or non-numeric) labels."""
    if not np.issubdtype(y.dtype, np.number):
        return "classification"
    values = np.unique(y)
    integral = bool(np.all(np.isfinite(values)) and np.all(values == np.round(values)))
    return "classification" if integral and len(values) <= AUTO_MAX_CLASSES else "regression"


def from_arrays(
    name: str,
    X: np.ndarray,
    y: np.ndarray,
    *,
    task: TaskChoice = "auto",
    seed: int = 0,
    X_test: np.ndarray | None = None,
    y_test: np.ndarray | None = None,
) -> Dataset:
    """A dataset from arrays; without ``X_test``/``y_test`` a seeded 80/20 split is made."""
    resolved = infer_task(y) if task == "auto" else task
    X = np.asarray(X, dtype=np.float64)
    if X.ndim != 2 or X.shape[0] != len(y):
        raise ValueError(f"{name}: X must be (n, d) with one row per label, got {X.shape}")
    if not np.isfinite(X).all():
        raise ValueError(f"{name}: features must be finite numbers (NaN or inf found)")
    if X_test is None or y_test is None:
        if resolved == "classification":
            codes = encode_labels(y)
            tr, te = stratified_split(codes, TEST_FRACTION, seed)
            return Dataset(name, resolved, X[tr], codes[tr], X[te], codes[te])
        order = np.random.default_rng(seed).permutation(len(y))
        n_test = round(len(y) * TEST_FRACTION)
        te, tr = order[:n_test], order[n_test:]
        y_float = np.asarray(y, dtype=np.float64)
        return Dataset(name, resolved, X[tr], y_float[tr], X[te], y_float[te])
    X_test = np.asarray(X_test, dtype=np.float64)
    if resolved == "classification":
        codes = encode_labels(np.concatenate([y, y_test]))
        return Dataset(name, resolved, X, codes[: len(y)], X_test, codes[len(y) :])
    return Dataset(
        name, resolved, X, np.asarray(y, np.float64), X_test, np.asarray(y_test, np.float64)
    )


def _read_table(path: Path, label: str, sep: str) -> tuple[np.ndarray, np.ndarray]:
    """Numeric features and the ``label`` column of a CSV / TSV with a header row."""
    import pandas as pd

    frame = pd.read_csv(path, sep=sep)
    if label not in frame.columns:
        raise ValueError(
            f"--label {label!r} is not a column of {path.name} (columns: {list(frame.columns)[:8]}...)"
        )
    features = frame.drop(columns=[label])
    non_numeric = [c for c in features.columns if not pd.api.types.is_numeric_dtype(features[c])]
    if non_numeric:
        raise ValueError(f"{path.name}: feature columns must be numeric, not {non_numeric[:5]}")
    return features.to_numpy(dtype=np.float64), frame[label].to_numpy()


def _read_npz(path: Path) -> dict[str, np.ndarray]:
    with np.load(path, allow_pickle=False) as z:
        arrays = {k: z[k] for k in z.files}
    if {"X_train", "y_train"} <= set(arrays):
        return arrays
    if {"X", "y"} <= set(arrays):
        return {"X_train": arrays["X"], "y_train": arrays["y"]}
    raise ValueError(f"{path.name}: needs arrays X_train, y_train (and X_test, y_test) or X, y")


def _load_file(
    path: Path,
    label: str | None,
    task: TaskChoice,
    seed: int,
    categorical: Sequence[str] = (),
    types: dict[str, Any] | None = None,
) -> Dataset:
    """One data file as a dataset (the file part of :func:`load_source`)."""
    if not path.exists():
        raise ValueError(f"data file {str(path)!r} does not exist")
    name = path.name.split(".")[0]
    if is_table(path):
        if label is None and not path.name.endswith((".tsv", ".tsv.gz", ".parquet", ".pq")):
            raise ValueError(f"{path.name}: a CSV needs --label naming its label column")
        frame = read_frame(path)
        column = label or "target"
        if column not in frame.columns:
            raise ValueError(
                f"--label {column!r} is not a column of {path.name} "
                f"(columns: {list(frame.columns)[:8]}...)"
            )
        y_all = frame[column].to_numpy()
        resolved = infer_task(y_all) if task == "auto" else task
        featured = table_dataset(
            name, frame, column, task=resolved, seed=seed, categorical=categorical, types=types
        )
        if featured is not None:
            return featured
        if path.name.endswith((".csv.gz", ".parquet", ".pq")):  # numeric only
            features = frame.drop(columns=[column]).to_numpy(dtype=np.float64)
            return from_arrays(name, features, y_all, task=task, seed=seed)
    if path.name.endswith(".tsv.gz"):
        X, y = read_tsv_gz(path, label or "target")
    elif path.suffix == ".tsv":
        X, y = _read_table(path, label or "target", "\t")
    elif path.suffix == ".csv":
        if label is None:
            raise ValueError(f"{path.name}: a CSV needs --label naming its label column")
        X, y = _read_table(path, label, ",")
    elif path.suffix == ".npz":
        z = _read_npz(path)
        y_test = np.ravel(z["y_test"]) if "y_test" in z else None
        return from_arrays(
            name,
            z["X_train"],
            np.ravel(z["y_train"]),
            task=task,
            seed=seed,
            X_test=z.get("X_test"),
            y_test=y_test,
        )
    else:
        raise ValueError(
            f"unsupported data file {path.name}: use .csv, .tsv (or .gz), .parquet or .npz"
        )
    return from_arrays(name, X, y, task=task, seed=seed)


def load_source(
    source: str,
    *,
    label: str | None = None,
    task: TaskChoice = "auto",
    seed: int = 0,
    split: int = 0,
    categorical: Sequence[str] = (),
    schema: Path | None = None,
) -> Dataset:
    """Load ``source``: a ``.csv``/``.tsv`` (plain or gzip), ``.parquet`` or ``.npz`` path,
    or a bundled name.

    Parameters
    ----------
    source
        A file path, or one of :func:`known_names`.
    label
        Label column of a CSV (required) or a TSV (default ``target``).
    task
        ``auto`` reads integer labels with at most 100 distinct values as classes.
    seed
        Seeds the 80/20 split of a source without a test split.
    split
        Which of the DGT paper's splits a bundled regression set uses (0..4).
    categorical
        Feature columns holding categories as integer codes.
    schema
        A schema file (:func:`banditree.datasets.tables.read_schema_file`): declared
        feature types (and the label column when ``label`` is not given).

    A table with string, boolean or categorical columns, missing cells, or declared
    categories gets a feature schema (:mod:`banditree.datasets.tables`); the bundled
    :data:`banditree.datasets.CATEGORICAL` sets always do (their features files).
    """
    types: dict[str, Any] | None = None
    if schema is not None:
        data, schema_label = read_schema_file(schema)
        types, label = dict(data["features"]), label or schema_label
    path = Path(source)
    if path.suffix in (".gz", ".tsv", ".csv", ".npz", ".parquet", ".pq") or path.exists():
        return _load_file(path, label, task, seed, categorical, types)
    if source in datasets.CATEGORICAL or (
        source in datasets.CLASSIFICATION and (categorical or types)
    ):
        declared = {**datasets.feature_types(source), **(types or {})}
        declared.update({c: "categorical" for c in categorical})
        return with_schema_types(datasets.load(source, seed=seed), declared)
    if source in datasets.CLASSIFICATION or source in datasets.REGRESSION:
        return datasets.load(source, split=split, seed=seed)
    if source in SKLEARN_SETS:
        import sklearn.datasets

        bunch = getattr(sklearn.datasets, f"load_{source}")()
        return from_arrays(source, bunch.data, bunch.target, task=SKLEARN_SETS[source], seed=seed)
    raise ValueError(f"unknown data source {source!r}: give a file path or one of {known_names()}")
