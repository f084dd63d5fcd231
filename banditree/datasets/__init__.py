"""Bundled real datasets (see ``SOURCES.md``) and loaders for PMLB ``.tsv.gz`` and ``.npz`` splits."""

from __future__ import annotations

import gzip
from dataclasses import dataclass
from importlib import resources
from pathlib import Path

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
    with gzip.open(path, "rt") as fh:
        header = fh.readline().rstrip("\n").split("\t")
        data = np.loadtxt(fh, delimiter="\t", ndmin=2)
    if label not in header:
        raise ValueError(f"label column {label!r} not in {path} (columns: {header[:8]}...)")
    j = header.index(label)
    return np.delete(data, j, axis=1), data[:, j]


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
    if name in CLASSIFICATION:
        X, raw = read_tsv_gz(data_path(f"{name}.tsv.gz"))
        y = encode_labels(raw)
        tr, te = stratified_split(y, test_fraction, seed)
        return Dataset(name, "classification", X[tr], y[tr], X[te], y[te])
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
    raise ValueError(f"unknown dataset {name!r}; bundled: {', '.join(CLASSIFICATION + REGRESSION)}")
