"""Public classification sets this repository does not hold, read from an installed package.

A default fitted to the bundled sets should show its weakness on data it was never run
on. The machine that runs the benchmarks reaches only package registries, so these come
from the data files shipped inside River's and scikit-learn's wheels (``pip install
'banditree[bench,sim]'``), read where pip put them, without importing either package:

* ``river_bananas``: OpenML 1460 "banana", 5,300 rows, 2 features, 2 classes.
* ``river_phishing``: UCI "Website Phishing" as River ships it, 1,250 rows, 9 features,
  2 classes.
* ``sklearn_wdbc``: UCI "Breast Cancer Wisconsin (Diagnostic)" as scikit-learn ships it
  (``sim`` extra), 569 rows, 30 features, 2 classes.

Each gets the bundled sets' seeded stratified 80/20 split.
"""

from __future__ import annotations

import gzip
import io
import zipfile
from importlib import metadata
from pathlib import Path

import numpy as np

from banditree.datasets import Dataset, encode_labels, stratified_split

EXTERNAL = ("river_bananas", "river_phishing", "sklearn_wdbc")


def _package_file(package: str, relative: str) -> Path:
    """``relative`` inside the installed distribution ``package``."""
    try:
        dist = metadata.distribution(package)
    except metadata.PackageNotFoundError:
        raise RuntimeError(
            f"this external set is read from {package}'s wheel: pip install 'banditree[bench,sim]'"
        ) from None
    path = Path(str(dist.locate_file(relative)))
    if not path.is_file():
        raise RuntimeError(f"{package} {dist.version} does not ship {relative}")
    return path


def _bananas() -> tuple[np.ndarray, np.ndarray]:
    """Rows ``label 1:x1 2:x2`` (libsvm form, labels -1/1)."""
    with zipfile.ZipFile(_package_file("river", "river/datasets/banana.zip")) as archive:
        text = archive.read("banana.all.txt").decode()
    rows = [line.split() for line in text.splitlines() if line.strip()]
    X = np.array([[float(field.split(":")[1]) for field in row[1:]] for row in rows])
    return X, np.array([float(row[0]) for row in rows])


def _phishing() -> tuple[np.ndarray, np.ndarray]:
    """A CSV with a header, the label ``is_phishing`` last."""
    with gzip.open(_package_file("river", "river/datasets/phishing.csv.gz"), "rt") as fh:
        data = np.loadtxt(io.StringIO(fh.read()), delimiter=",", skiprows=1, ndmin=2)
    return data[:, :-1], data[:, -1]


def _wdbc() -> tuple[np.ndarray, np.ndarray]:
    """A CSV whose first row is ``rows,features,name0,name1``, the label (0/1) last."""
    path = _package_file("scikit-learn", "sklearn/datasets/data/breast_cancer.csv")
    data = np.loadtxt(path, delimiter=",", skiprows=1, ndmin=2)
    return data[:, :-1], data[:, -1]


def load_external(name: str, *, seed: int = 0, test_fraction: float = 0.2) -> Dataset:
    """One of :data:`EXTERNAL` as a :class:`~banditree.datasets.Dataset`."""
    readers = {"river_bananas": _bananas, "river_phishing": _phishing, "sklearn_wdbc": _wdbc}
    if name not in readers:
        raise ValueError(f"unknown external set {name!r}; known: {', '.join(EXTERNAL)}")
    X, raw = readers[name]()
    y = encode_labels(raw)
    tr, te = stratified_split(y, test_fraction, seed)
    return Dataset(name, "classification", X[tr], y[tr], X[te], y[te])
