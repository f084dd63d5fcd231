"""Data sources: files of each format, bundled names, seeded 80/20 splits, clear errors."""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np
import pytest

from banditree.datasets.sources import infer_task, load_source


def _xy(n: int = 50, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.normal(size=(n, 3)), rng.integers(0, 3, n) * 10 + 5  # labels 5, 15, 25


def test_csv_with_named_label_column(tmp_path: Path) -> None:
    X, y = _xy()
    path = tmp_path / "toy.csv"
    rows = ["a,b,kind,c"] + [f"{r[0]},{r[1]},{t},{r[2]}" for r, t in zip(X, y, strict=True)]
    path.write_text("\n".join(rows) + "\n")
    ds = load_source(str(path), label="kind", seed=1)
    assert ds.task == "classification" and ds.n_features == 3
    assert len(ds.y_train) + len(ds.y_test) == 50 and 9 <= len(ds.y_test) <= 11  # stratified
    assert set(np.unique(np.concatenate([ds.y_train, ds.y_test]))) == {0, 1, 2}
    again = load_source(str(path), label="kind", seed=1)
    np.testing.assert_array_equal(ds.X_test, again.X_test)  # the split is seeded
    with pytest.raises(ValueError, match="--label 'nope' is not a column"):
        load_source(str(path), label="nope")
    with pytest.raises(ValueError, match="needs --label"):
        load_source(str(path))


def test_tsv_gz_with_target_column(tmp_path: Path) -> None:
    X, _ = _xy(40)
    y = X[:, 0] * 2.5 + 0.1  # continuous -> regression
    path = tmp_path / "reg.tsv.gz"
    with gzip.open(path, "wt") as fh:
        fh.write("f0\tf1\ttarget\tf2\n")
        for r, t in zip(X, y, strict=True):
            fh.write(f"{r[0]}\t{r[1]}\t{t}\t{r[2]}\n")
    ds = load_source(str(path))
    assert ds.task == "regression" and ds.n_features == 3
    assert len(ds.y_train) == 32 and len(ds.y_test) == 8
    train_and_test = np.sort(np.concatenate([ds.y_train, ds.y_test]))
    np.testing.assert_allclose(train_and_test, np.sort(y))


def test_npz_with_and_without_test_split(tmp_path: Path) -> None:
    X, y = _xy(30)
    full = tmp_path / "full.npz"
    np.savez(full, X_train=X[:20], y_train=y[:20], X_test=X[20:], y_test=y[20:])
    ds = load_source(str(full), task="classification")
    np.testing.assert_array_equal(ds.X_test, X[20:])
    assert len(ds.y_train) == 20
    train_only = tmp_path / "train.npz"
    np.savez(train_only, X_train=X, y_train=y.astype(float) + 0.5)
    ds = load_source(str(train_only), task="regression")
    assert len(ds.y_train) == 24 and len(ds.y_test) == 6


@pytest.mark.parametrize(
    ("name", "task", "n_features"),
    [
        ("digits", "classification", 64),
        ("diabetes", "regression", 10),
        ("letter", "classification", 16),
        ("cpu_act", "regression", 21),
    ],
)
def test_bundled_names(name: str, task: str, n_features: int) -> None:
    ds = load_source(name)
    assert ds.task == task and ds.n_features == n_features
    assert len(ds.y_test) > 0 and np.isfinite(ds.X_train).all()


def test_task_inference() -> None:
    assert infer_task(np.array([1, 2, 3, 1])) == "classification"
    assert infer_task(np.array([0.5, 1.25, 3.0])) == "regression"
    assert infer_task(np.arange(500)) == "regression"
    assert infer_task(np.array(["cat", "dog"])) == "classification"


def test_missing_file_and_unknown_name(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="does not exist"):
        load_source(str(tmp_path / "absent.csv"))
    with pytest.raises(ValueError, match="unknown data source"):
        load_source("iris_but_not_bundled")
