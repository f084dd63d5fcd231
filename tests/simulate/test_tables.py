"""Data files with strings, booleans, categories and missing cells, end to end."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from simulate.data import load_source
from simulate.experiment import SimulationOptions, simulate


def frame(n: int = 600, seed: int = 0) -> pd.DataFrame:
    r = np.random.default_rng(seed)
    country = r.choice(["DE", "FR", "US"], n).astype(object)
    premium = r.random(n) < 0.5
    label = np.where(country == "DE", "buy", np.where(premium, "wait", "skip"))
    age = r.integers(18, 80, n).astype(float)
    age[r.random(n) < 0.1] = np.nan
    country[r.random(n) < 0.05] = None
    return pd.DataFrame(
        {
            "age": age,
            "country": country,
            "premium": premium,
            "code": r.integers(0, 4, n),
            "y": label,
        }
    )


@pytest.mark.parametrize("suffix", ["csv", "csv.gz", "tsv", "tsv.gz", "parquet"])
def test_every_format_reads_strings_booleans_and_missing_cells(tmp_path: Path, suffix: str) -> None:
    path = tmp_path / f"d.{suffix}"
    df = frame()
    if suffix == "parquet":
        df.assign(country=df.country.astype("category")).to_parquet(path)
    else:
        df.to_csv(path, sep="\t" if suffix.startswith("tsv") else ",", index=False)
    ds = load_source(str(path), label="y", categorical=["code"])
    assert ds.schema is not None and ds.task == "classification" and ds.n_classes == 3
    types = {f["name"]: (f["type"], f["missing"]) for f in ds.schema["features"]}
    assert types == {
        "age": ("numeric", True),
        "country": ("categorical", True),
        "premium": ("boolean", False),
        "code": ("categorical", False),
    }
    codes = next(f for f in ds.schema["features"] if f["name"] == "code")["values"]
    assert sorted(codes) == ["0", "1", "2", "3"]
    assert any(v is None for v in ds.X_train[:, 0])  # missing cells kept as None


def test_numeric_files_keep_the_plain_path(tmp_path: Path) -> None:
    path = tmp_path / "n.csv"
    frame().drop(columns=["country", "premium"]).dropna().to_csv(path, index=False)
    ds = load_source(str(path), label="y")
    assert ds.schema is None and ds.X_train.dtype == np.float64


def test_schema_file_declares_types_and_label(tmp_path: Path) -> None:
    path, schema = tmp_path / "d.csv", tmp_path / "schema.json"
    frame().to_csv(path, index=False)
    schema.write_text(json.dumps({"label": "y", "features": {"code": "categorical"}}))
    ds = load_source(str(path), schema=schema)
    assert ds.schema is not None
    assert {f["name"]: f["type"] for f in ds.schema["features"]}["code"] == "categorical"
    with pytest.raises(ValueError, match="--categorical"):
        load_source(str(path), label="y", categorical=["nope"])


def test_bundled_categorical_set_has_its_schema() -> None:
    ds = load_source("tic_tac_toe")
    assert ds.schema is not None and len(ds.schema["features"]) == 9
    assert all(f["type"] == "categorical" for f in ds.schema["features"])


def test_simulate_learns_from_a_string_table_and_reports_the_schema(tmp_path: Path) -> None:
    path = tmp_path / "d.csv.gz"
    frame(1500).to_csv(path, index=False)
    report = simulate(
        SimulationOptions(
            data=str(path), model=None, label="y", out=tmp_path / "run", seeds=1,
            baselines=["random", "vw"],
            progress=False, eval_points=2, categorical=("code",),
        )
    )  # fmt: skip
    assert [f["name"] for f in report["features"]["features"]] == [
        "age",
        "country",
        "premium",
        "code",
    ]
    assert any("vw skipped" in n for n in report["notices"])
    stored = json.loads((tmp_path / "run" / "report.json").read_text())
    assert stored["features"] == report["features"]
    learned = report["learners"]["dgt"]["test_accuracy"]
    assert learned > 0.85 > report["learners"]["random"]["test_accuracy"]


def test_train_reads_a_string_table_and_reports_its_schema(tmp_path: Path) -> None:
    from typer.testing import CliRunner

    from banditree_cli import app

    path, out = tmp_path / "d.parquet", tmp_path / "run"
    frame(800).to_parquet(path)
    args = ["train", str(path), "--label", "y", "--categorical", "code", "--height", "3"]
    args += ["--epochs", "30", "--grid", "none", "--out", str(out), "--no-progress"]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    assert [f["name"] for f in report["features"]["features"]] == [
        "age",
        "country",
        "premium",
        "code",
    ]
    assert report["test_accuracy"] > 0.9  # the rule is on the country and the boolean
