from typer.testing import CliRunner

from banditree import __version__
from banditree_cli import app


def test_version_and_help() -> None:
    runner = CliRunner()
    out = runner.invoke(app, ["--version"])
    assert out.exit_code == 0 and __version__ in out.output
    out = runner.invoke(app, ["--help"])
    assert out.exit_code == 0 and "banditree" in out.output.lower()


def test_train_writes_model_report_and_plot(tmp_path) -> None:
    import json

    import numpy as np

    from banditree.datasets import load
    from banditree.models.dgt.trained import TrainedTree

    grid = tmp_path / "grid.json"
    grid.write_text(json.dumps({"momentum": [0.0, 0.8]}))
    out = tmp_path / "run"
    args = ["train", "segmentation", "--height", "3", "--epochs", "4", "--grid", str(grid)]
    result = CliRunner().invoke(app, [*args, "--out", str(out), "--no-progress"])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    assert report["task"] == "classification" and report["dataset"] == "segmentation"
    assert len(report["grid"]) == 2 and report["chosen"]["momentum"] in (0.0, 0.8)
    assert 0.3 < report["test_accuracy"] <= 1.0 and report["seconds"] > 0
    assert (out / "loss.png").read_bytes()[:4] == b"\x89PNG"
    model = TrainedTree.load(out / "model.safetensors")
    ds = load("segmentation")
    accuracy = float(np.mean(model.predict(ds.X_test) == ds.y_test))
    assert accuracy == report["test_accuracy"]


def test_train_defaults_to_the_l1_grid_on_every_core(tmp_path) -> None:
    import json

    from banditree.supervised.command import available_cores

    out = tmp_path / "run"
    args = ["train", "segmentation", "--height", "3", "--epochs", "2", "--out", str(out)]
    result = CliRunner().invoke(app, [*args, "--no-progress"])
    assert result.exit_code == 0, result.output
    report = json.loads((out / "report.json").read_text())
    assert [g["settings"]["momentum"] for g in report["grid"]] == [0.0, 0.3, 0.8]
    assert all(g["settings"]["hidden"] == [] for g in report["grid"])  # no L = 3 run
    assert report["options"]["grid"] == "paper-l1"
    assert report["options"]["jobs"] == report["jobs"] == available_cores()
    refused = CliRunner().invoke(app, [*args, "--jobs", "-1"])
    assert refused.exit_code == 2 and "--jobs" in refused.output


def test_train_refuses_bad_options_clearly(tmp_path) -> None:
    import torch

    runner = CliRunner()
    base = ["train", "segmentation", "--out", str(tmp_path / "x"), "--no-progress"]
    out = runner.invoke(app, [*base, "--grid", "nope"])
    assert out.exit_code == 2 and "--grid must be one of" in out.output
    out = runner.invoke(app, [*base, "--height", "13", "--grid", "none"])
    assert out.exit_code == 2 and "height must be an integer in [1, 12]" in out.output
    if not torch.cuda.is_available():
        out = runner.invoke(app, [*base, "--device", "cuda"])
        assert out.exit_code == 2 and "torch sees no GPU" in out.output
    assert not (tmp_path / "x").exists()


def test_simulate_warm_start_adds_a_warm_competitor(tmp_path) -> None:
    import json

    runner = CliRunner()
    model_dir = tmp_path / "model"
    trained = runner.invoke(
        app,
        ["train", "segmentation", "--height", "4", "--epochs", "20", "--grid", "none",
         "--out", str(model_dir), "--no-progress"],
    )  # fmt: skip
    assert trained.exit_code == 0, trained.output
    out = tmp_path / "sim"
    result = runner.invoke(
        app,
        ["simulate", "segmentation", "--model", "dgt", "--rounds", "300", "--seeds", "1",
         "--baselines", "random", "--warm-start", str(model_dir / "model.safetensors"),
         "--eval-points", "3", "--out", str(out), "--no-progress"],
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    learners = json.loads((out / "report.json").read_text())["learners"]
    warm, cold = learners["dgt_warm_start"], learners["dgt"]
    assert warm["config"]["height"] == cold["config"]["height"] == 4
    assert warm["progressive_mean_loss"] < cold["progressive_mean_loss"]


def test_help_lists_the_generated_commands_without_building_them() -> None:
    """``banditree --help`` lists simulate and train without importing the configuration."""
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from typer.testing import CliRunner\n"
        "from banditree_cli import app\n"
        "out = CliRunner().invoke(app, ['--help'], terminal_width=200).output\n"
        "assert 'simulate' in out and 'train' in out and 'Replay DATA' in out, out\n"
        "print(sorted(m for m in sys.modules if m.startswith(('pydantic', 'banditree.learners'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


def test_train_options_are_the_training_config_fields() -> None:
    import dataclasses

    import typer

    from banditree.supervised.config import TrainingConfig

    command = typer.main.get_command(app).get_command(None, "train")  # type: ignore[attr-defined]
    options = {opt for param in command.params for opt in param.opts}
    for field in dataclasses.fields(TrainingConfig):
        assert "--" + field.name.replace("_", "-") in options, field.name
        assert field.metadata["description"], field.name
    assert {"--grid", "--jobs", "--threads", "--out"} <= options
