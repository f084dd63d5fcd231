"""Bundled real datasets (see ``SOURCES.md``) and loaders for PMLB ``.tsv.gz`` and ``.npz`` splits."""

from __future__ import annotations

import gzip
import json
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray

CLASSIFICATION = (
    "letter",
    "pendigits",
    "satimage",
    "segmentation",
    "shuttle",
    "optdigits",
    "krkopt",
    "nursery",
    "spambase",
    "fars",
    "waveform_40",
    "texture",
    "coil2000",
    "page_blocks",
)
#: classification sets whose features are mostly categories (integer codes; see
#: :func:`feature_types`); ``kddcup`` is a seeded 50,000-row sample of the PMLB set
CATEGORICAL = (
    "kddcup",
    "splice",
    "tic_tac_toe",
    "german",
    "soybean",
    "cmc",
    "hypothyroid",
    "credit_a",
)
#: regression sets with the DGT paper's own five splits (``.npz``)
REGRESSION_SPLITS = ("abalone", "cpu_act")
#: regression sets without a fixed split (PMLB ``.tsv.gz``: seeded 80/20 split)
REGRESSION_TSV = ("pol", "house_16H")
REGRESSION = REGRESSION_SPLITS + REGRESSION_TSV


@dataclass(frozen=True)
class Dataset:
    """A train/test split. ``y`` holds class indices 0..K-1 (classification) or targets."""

    name: str
    task: str
    X_train: FloatArray
    y_train: np.ndarray
    X_test: FloatArray
    y_test: np.ndarray
    feature_names: tuple[str, ...] = ()
    #: a feature schema (:class:`banditree.features.FeatureSchema` JSON) when the rows
    #: hold raw values (strings, booleans, None for a missing cell) in an object array
    schema: dict[str, Any] | None = None

    @property
    def n_features(self) -> int:
        return int(self.X_train.shape[1])

    @property
    def n_classes(self) -> int:
        return (
            int(max(self.y_train.max(), self.y_test.max())) + 1
            if self.task == "classification"
            else 0
        )


def data_path(filename: str) -> Path:
    """Path of a bundled data file."""
    return Path(str(resources.files("banditree.datasets") / "data" / filename))


def read_tsv_gz(path: Path | str, label: str = "target") -> tuple[FloatArray, np.ndarray]:
    """Features and raw labels of a PMLB-style gzipped TSV with a header row."""
    X, y, _ = read_tsv_gz_named(path, label)
    return X, y


def read_tsv_gz_named(
    path: Path | str, label: str = "target"
) -> tuple[FloatArray, np.ndarray, tuple[str, ...]]:
    """:func:`read_tsv_gz` and the feature columns' names."""
    with gzip.open(path, "rt") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        data = np.loadtxt(fh, delimiter="\t", ndmin=2)
    if label not in header:
        raise ValueError(f"label column {label!r} not in {path} (columns: {header[:8]}...)")
    j = header.index(label)
    names = tuple(h for i, h in enumerate(header) if i != j)
    return np.delete(data, j, axis=1), data[:, j], names


def feature_types(name: str) -> dict[str, str]:
    """``{column: "categorical" | "numeric"}`` of a bundled PMLB classification set."""
    if name not in CLASSIFICATION + CATEGORICAL:
        raise ValueError(f"no feature types for {name!r}")
    with open(data_path(f"{name}.features.json")) as fh:
        types: dict[str, str] = json.load(fh)["features"]
    return types


def encode_labels(y: np.ndarray) -> np.ndarray:
    """Map arbitrary class labels to 0..K-1 (sorted order)."""
    _, codes = np.unique(y, return_inverse=True)
    return codes.astype(np.int64)


def stratified_split(
    y: np.ndarray, test_fraction: float, seed: int
) -> tuple[np.ndarray, np.ndarray]:
    """Seeded stratified train/test index split."""
    rng = np.random.default_rng(seed)
    train, test = [], []
    for c in np.unique(y):
        idx = rng.permutation(np.flatnonzero(y == c))
        n_test = round(len(idx) * test_fraction)
        test.append(idx[:n_test])
        train.append(idx[n_test:])
    return rng.permutation(np.concatenate(train)), rng.permutation(np.concatenate(test))


def load(name: str, *, split: int = 0, seed: int = 0, test_fraction: float = 0.2) -> Dataset:
    """A bundled dataset by name: PMLB sets get a seeded 80/20 split, npz sets their ``split``.

    The split of a PMLB classification set is stratified; that of ``pol`` and
    ``house_16H`` is a plain seeded permutation.
    """
    if name in CLASSIFICATION or name in CATEGORICAL:
        X, raw, names = read_tsv_gz_named(data_path(f"{name}.tsv.gz"))
        y = encode_labels(raw)
        tr, te = stratified_split(y, test_fraction, seed)
        return Dataset(name, "classification", X[tr], y[tr], X[te], y[te], names)
    if name in REGRESSION_TSV:
        X, y = read_tsv_gz(data_path(f"{name}.tsv.gz"))
        order = np.random.default_rng(seed).permutation(len(y))
        n_test = round(len(y) * test_fraction)
        te, tr = order[:n_test], order[n_test:]
        return Dataset(name, "regression", X[tr], y[tr], X[te], y[te])
    if name in REGRESSION_SPLITS:
        if not 0 <= split <= 4:
            raise ValueError(f"split must be in 0..4, got {split}")
        with np.load(data_path(f"{name}{split}.npz")) as z:
            return Dataset(
                name,
                "regression",
                z["X_train"].astype(np.float64),
                z["y_train"].astype(np.float64).ravel(),
                z["X_test"].astype(np.float64),
                z["y_test"].astype(np.float64).ravel(),
            )
    raise ValueError(
        f"unknown dataset {name!r}; bundled: {', '.join(CLASSIFICATION + CATEGORICAL + REGRESSION)}"
    )
