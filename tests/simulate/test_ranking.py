"""``banditree simulate --task ranking``: ranking streams, the simulation's report, OBD."""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from banditree_cli import app
from simulate.ranking import RankingSimulation, simulate_ranking
from simulate.ranking_streams import Stream, build_stream, summary

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def test_stream_holds_classes_back_until_the_half() -> None:
    stream = build_stream("pendigits", seed=3, rounds=1500, n_candidates=6)
    assert len(stream.labels) == 1500 and 0 < stream.half < 1500
    assert len(stream.held_back) == 10 // 4
    for t, (cands, label) in enumerate(zip(stream.candidates, stream.labels, strict=True)):
        assert label in cands and len(set(cands.tolist())) == len(cands) == 6
        if t < stream.half:
            assert not stream.held_back & set(cands.tolist()), t
            assert int(label) not in stream.held_back
    late = stream.labels[stream.half :]
    assert any(int(v) in stream.held_back for v in late)
    offered = {int(c) for cands in stream.candidates[stream.half :] for c in cands}
    assert stream.held_back <= offered
    assert stream.class_features.shape == (10, 8)
    again = build_stream("pendigits", seed=3, rounds=1500, n_candidates=6)
    assert np.array_equal(again.uniforms, stream.uniforms)
    assert all(
        np.array_equal(a, b) for a, b in zip(again.candidates, stream.candidates, strict=True)
    )
    other = build_stream("pendigits", seed=4, rounds=1500, n_candidates=6)
    assert not np.array_equal(other.uniforms, stream.uniforms)


@pytest.mark.parametrize(
    ("name", "rounds", "candidates", "message"),
    [("cpu_act", 500, 5, "regression"), ("pendigits", 1, 5, "rounds"),
     ("pendigits", 500, 1, "candidates")],
)  # fmt: skip
def test_stream_refuses_what_it_cannot_build(
    name: str, rounds: int, candidates: int, message: str
) -> None:
    with pytest.raises(ValueError, match=message):
        build_stream(name, 0, rounds, candidates)


def test_summary_splits_cold_and_seen_rewards_by_window() -> None:
    labels = np.array([0, 1, 0, 1, 2, 0, 2, 2, 1, 2])
    stream = Stream("toy", np.zeros((10, 1)), [np.arange(3)] * 10, labels,
                    np.eye(3), {2}, half=4, uniforms=np.zeros(10))  # fmt: skip
    losses = np.array([1, 1, 0, 0, 1, 0, 0, 1, 1, 0], dtype=float)
    out = summary(stream, losses, seconds=1.0, cold_window=3)
    # rounds 4..6 after the half: class 2 at 4 (loss 1) and 6 (loss 0); class 0 at 5
    assert out["cold_reward"] == pytest.approx(0.5) and out["seen_reward"] == 1.0
    # rounds 7..9: class 2 at 7 (loss 1) and 9 (loss 0); class 1 at 8 (loss 1)
    assert out["cold_reward_after"] == pytest.approx(0.5) and out["seen_reward_after"] == 0.0
    assert out["loss"] == pytest.approx(0.5) and out["loss_second_half"] == pytest.approx(0.5)
    assert out["rounds"] == 10


def test_simulation_learns_and_scores_cold_actions_from_their_features(tmp_path: Path) -> None:
    options = RankingSimulation(
        "pendigits", tmp_path, rounds=1200, candidates=8, seeds=2,
        baselines=["random", "linear"], cold_window=300, progress=False,
    )  # fmt: skip
    report = simulate_ranking(options)
    assert set(report["learners"]) == {"ranking", "random", "linear"}
    assert report["seeds"] == [0, 1] and report["rounds"] == [1200, 1200]
    learned, random = report["learners"]["ranking"], report["learners"]["random"]
    for entry in report["learners"].values():
        low, high = entry["loss_ci95"]
        assert low <= entry["loss"] <= high
        assert len(entry["per_seed"]) == 2
    # 8 candidates: random is right 1 time in 8; the model learns the classes
    assert random["loss"] == pytest.approx(7 / 8, abs=0.05)
    assert learned["loss"] < 0.5
    # classes never offered before the half are ranked from their features: the ridge
    # (the linear baseline) at once, the default within the next window
    linear = report["learners"]["linear"]
    assert linear["cold_reward"] > 0.3 > 2 * random["cold_reward"]
    assert learned["cold_reward_after"] > max(0.5, 3 * random["cold_reward_after"])
    saved = json.loads((tmp_path / "report.json").read_text())
    assert saved["learners"]["ranking"]["loss"] == pytest.approx(learned["loss"])
    assert (tmp_path / "ranking.png").read_bytes().startswith(PNG_MAGIC)
    import matplotlib.image

    image = matplotlib.image.imread(tmp_path / "ranking.png")
    assert image.ndim == 3 and image.shape[1] > 600 and np.ptp(image) > 0
    with (tmp_path / "curves.csv").open() as handle:
        rows = list(csv.DictReader(handle))
    kinds = {(r["learner"], r["curve"]) for r in rows}
    assert ("ranking", "progressive_loss") in kinds and ("ranking", "cold_reward") in kinds
    last = [r for r in rows if r["learner"] == "ranking" and r["curve"] == "progressive_loss"]
    assert int(last[-1]["round"]) == 1200
    seed1 = [r for r in last if r["seed"] == "1"]
    assert float(seed1[-1]["value"]) == pytest.approx(learned["per_seed"][1]["loss"], rel=1e-5)
    assert np.mean([s["loss"] for s in learned["per_seed"]]) == pytest.approx(learned["loss"])


def test_learner_options_reach_the_ranking_model(tmp_path: Path) -> None:
    base = dict(rounds=300, candidates=5, seeds=1, baselines=[], cold_window=100, progress=False)
    a = simulate_ranking(RankingSimulation("pendigits", tmp_path / "a", **base))  # type: ignore[arg-type]
    b = simulate_ranking(
        RankingSimulation(
            "pendigits", tmp_path / "b", config={"explorer": "epsilon_greedy",
            "explorer_parameter": 1.0}, **base,  # type: ignore[arg-type]
        )
    )  # fmt: skip
    assert b["config"]["explorer"] == "epsilon_greedy"
    # epsilon 1: every candidate equally likely, whatever was learned (1 in 5 right)
    assert b["learners"]["ranking"]["loss"] == pytest.approx(0.8, abs=0.07)
    assert a["learners"]["ranking"]["loss"] < b["learners"]["ranking"]["loss"] - 0.2
    with pytest.raises(ValueError, match="baselines"):
        simulate_ranking(
            RankingSimulation("pendigits", tmp_path / "c", **{**base, "baselines": ["tel"]})  # type: ignore[arg-type]
        )


def test_command_runs_a_ranking_stream_and_refuses_what_it_does_not_take(tmp_path: Path) -> None:
    runner = CliRunner()
    args = ["simulate", "pendigits", "--task", "ranking", "--rounds", "300", "--seeds", "1",
            "--candidates", "4", "--cold-window", "100", "--baselines", "random",
            "--no-progress", "--out", str(tmp_path)]  # fmt: skip
    result = runner.invoke(app, args, terminal_width=200)
    assert result.exit_code == 0, result.output
    assert "progressive loss" in result.output and "cold / seen" in result.output
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["candidates"] == 4 and set(report["learners"]) == {"ranking", "random"}
    for extra, option in ((["--model", "dgt"], "--model"), (["--baselines", "tel"], "--baselines"),
                          (["--candidates", "1"], "--candidates")):  # fmt: skip
        bad = runner.invoke(app, [*args, *extra], terminal_width=200)
        assert bad.exit_code != 0 and option in bad.output, (option, bad.output)
    bad_option = runner.invoke(app, [*args, "--options", '{"id_ramp": -1}'], terminal_width=200)
    assert bad_option.exit_code == 2 and "options.id_ramp" in bad_option.output
    assert "greater than or equal to 0" in bad_option.output
    regression = runner.invoke(app, [*args[:1], "cpu_act", *args[2:]], terminal_width=200)
    assert regression.exit_code == 2 and "regression" in regression.output


def test_obd_ranking_log_and_its_estimates() -> None:
    from simulate.ranking_obd import evaluate_obd, obd_rows

    rows = obd_rows()
    assert len(rows) == 10_000
    first = rows[0]["ranking"]
    assert len(first["ids"]) == len(first["features"]) == 80
    assert rows[0]["propensity"] == pytest.approx(1 / 80)
    assert set(first["context"]) == {"user", "position"} and "affinity" in first["features"][0]
    figures = evaluate_obd({}, train_fraction=0.7, n_bootstrap=50, vw=False, limit=1500)
    result = figures["banditree"]
    assert result["n_train"] == 1050 and result["n_evaluation"] == 450
    clicks = [1.0 - r["loss"] for r in rows[1050:1500]]
    assert result["logged_policy"]["value"] == pytest.approx(float(np.mean(clicks)))
    for name in ("policy", "greedy"):
        for estimate in result[name].values():
            low, high = estimate["value_ci95"]
            assert math.isfinite(estimate["value"]) and low <= estimate["value"] <= high
    assert not any(name.startswith("vw_") for name in figures)
