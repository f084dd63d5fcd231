"""Data files with strings, booleans, categories and missing cells, end to end."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from banditree.datasets.sources import load_source
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
            data=str(path), model="dgt", label="y", out=tmp_path / "run", seeds=1,
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
    learned = report["learners"]["dgt"]["test_accuracy"]  # the default: test_cli.py
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


def test_train_gives_every_training_value_of_a_cut_column_its_own_column(tmp_path: Path) -> None:
    """Online a column's vocabulary is cut at 32 values; `train` sees the whole training
    split, so a cut column gets every training value (most frequent first), a column within
    the bound and a declared vocabulary stay as they are, and the fitted encoder gives each
    training value its own column (nothing lands in "other")."""
    from banditree.datasets.tables import encoded, fitted_encoder, training_sized
    from banditree.features import FeatureSchema
    from banditree.features.tables import TABLE_MAX_CATEGORIES

    r = np.random.default_rng(0)
    n = 2000
    wide = r.integers(0, 90, n)  # 90 integer codes: cut at 32 online
    narrow = r.choice(["a", "b", "c"], n)
    df = pd.DataFrame({"wide": wide, "narrow": narrow, "y": (wide % 2 == 0).astype(int)})
    path = tmp_path / "d.csv"
    df.to_csv(path, index=False)
    ds = load_source(str(path), label="y", categorical=("wide",))
    assert ds.schema is not None
    cut = FeatureSchema.model_validate(ds.schema).features
    assert cut["wide"].values is not None and len(cut["wide"].values) == TABLE_MAX_CATEGORIES
    sized = training_sized(ds)
    assert sized.schema is not None
    specs = FeatureSchema.model_validate(sized.schema).features
    train_values = {str(v) for v in ds.X_train[:, ds.feature_names.index("wide")]}
    assert specs["wide"].values is not None
    assert set(specs["wide"].values) == train_values
    assert specs["wide"].values[:TABLE_MAX_CATEGORIES] == cut["wide"].values  # same prefix
    assert specs["narrow"] == cut["narrow"]  # within the bound: unchanged
    encoder = fitted_encoder(sized)
    rows = encoded(sized, encoder).X_train
    other = encoder.schema.features["wide"].slots  # the "other" column follows the slots
    assert rows[:, other].sum() == 0  # every training value has a column of its own
    # a declared vocabulary of exactly the bound's size that is not the most frequent
    # values is the user's: left as it is
    declared = dict(ds.schema)
    declared["features"] = [
        {**f, "values": [str(v) for v in range(TABLE_MAX_CATEGORIES)]} if f["name"] == "wide" else f
        for f in ds.schema["features"]
    ]
    kept = training_sized(replace(ds, schema=declared))
    assert kept.schema == declared
