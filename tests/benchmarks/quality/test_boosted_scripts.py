"""The boosted kind's benchmarks: the report's halves and ratios, and tiny real runs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from benchmarks.quality import boosted_bandit
from benchmarks.speed import boosted_cost


def test_report_prints_each_half_with_its_geometric_mean_to_teucb() -> None:
    records = [
        {"dataset": s, "variant": v, "progressive_loss": loss, "cpu_ms_per_round": 1.0}
        for s, teucb, ours in (("waveform_40", 0.2, 0.1), ("nursery", 0.1, 0.4))
        for v, loss in (("teucb", teucb), ("boosted", ours))
    ]
    text = boosted_bandit.report(records, ["teucb", "boosted"])
    assert "| tuning | waveform_40 | 0.2000 (1.00 ms) | 0.1000 (1.00 ms) |" in text
    assert "tuning half, geometric mean of loss / teucb: teucb 1.000, boosted 0.500" in text
    assert "check half, geometric mean of loss / teucb: teucb 1.000, boosted 4.000" in text


def test_variants_name_configs_or_boosted_options() -> None:
    assert boosted_bandit.variant('boosted:{"optimism": 2}') == {
        "kind": "boosted",
        "options": {"optimism": 2},
    }
    assert boosted_bandit.variant('{"kind": "boosted", "height": 4}') == {
        "kind": "boosted",
        "height": 4,
    }
    with pytest.raises(ValueError, match="unknown variant 'nope'"):
        boosted_bandit.variant("nope")


def test_a_tiny_run_writes_a_record_per_variant(tmp_path: Path) -> None:
    boosted_bandit.main(
        ["--datasets", "waveform_40", "--seeds", "1", "--max-rounds", "150", "--out",
         str(tmp_path), "--jobs", "2", "--variants", "default", "boosted:{\"first_fit\": 50}"]
    )  # fmt: skip
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["variant"] for r in records] == ["default", 'boosted:{"first_fit": 50}']
    assert all(0.0 <= r["progressive_loss"] <= 1.0 and r["rounds"] == 150 for r in records)


def test_the_cost_benchmark_learns_refits_and_times_decisions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    boosted_cost.main(["--entries", "400", "--options", '{"first_fit": 100}'])
    result = json.loads(capsys.readouterr().out)
    assert result["fits"] >= 5
    assert result["boosted_act_us"] > 0 and result["feedbacks_per_cpu_second"] > 0


def test_rivals_table_takes_the_best_rival_per_set() -> None:
    from benchmarks.quality.boosted_bandit_report import table

    ours = [{"dataset": "spambase", "variant": "boosted", "progressive_loss": 0.05}]
    rivals = [
        {"dataset": "spambase", "learner": name, "form": form, "progressive_loss": loss}
        for name, form, loss in (
            ("default", "", 0.08), ("teucb", "", 0.09), ("tets", "", 0.15),
            ("vw_bag5", "raw", 0.12), ("vw_bag5", "z", 0.10), ("vw_adf_squarecb", "z", 0.11),
        )
    ]  # fmt: skip
    text = table(ours, rivals, "boosted")
    assert "| check | spambase | 0.0800 | 0.0900 | 0.1500 | 0.1000 (vw_bag5) | 0.0500 |" in text
    assert "check (1 sets): geometric mean of loss / best rival: boosted 0.556" in text
    assert "default 0.889" in text


def test_blend_weights_reads_the_fixed_weights_the_learner_would_use() -> None:
    from benchmarks.quality import boosted_blend_weights

    # blend_power 0: each model weighted by the other's error to the power 0, the plain mean
    result = boosted_blend_weights.run("waveform_40", 0, 400, {"blend_power": 0.0})
    assert result["rounds"] > 200  # the blend decides from the first fit at 100 on
    assert result["w_used"] == pytest.approx(0.5)
    # the learner's greedy error is the grid's at w = 0.5, read the same way
    assert result["used_greedy_error"] == pytest.approx(result["greedy_error_by_w"][5])
    assert result["best_greedy_error"] == min(result["greedy_error_by_w"])
    assert 0.0 < result["greedy_played"] <= 1.0
    for key in ("w_stacked", "w_ips", "w_all", "best_w_mse", "best_w_greedy"):
        assert 0.0 <= result[key] <= 1.0


def test_the_model_fits_score_both_logs_with_every_fit(tmp_path: Path) -> None:
    from benchmarks.quality import boosted_model_fits

    out = tmp_path / "fits.jsonl"
    boosted_model_fits.main(
        ["--datasets", "waveform_40", "--max-rounds", "300", "--test-rows", "200",
         "--fits", "ours", "no_base", "--out", str(out)]
    )  # fmt: skip
    records = [json.loads(line) for line in out.read_text().splitlines()]
    learners = [r for r in records if "learner" in r]
    assert [r["learner"] for r in learners] == ["boosted", "teucb"]
    fits = [(r["log"], r["fit"], r["rows"]) for r in records if "fit" in r]
    assert fits == [(log, fit, 300) for log in ("boosted", "teucb") for fit in ("ours", "no_base")]
    for r in records:
        scored = r.get("ensemble", r)
        assert 0.0 <= scored["accuracy"] <= 1.0 and scored["mse_all_actions"] >= 0.0
    # three balanced classes: a fit of 300 rounds beats a third
    assert all(r["accuracy"] > 0.4 for r in records if "fit" in r)


def test_small_curves_record_blocks_and_held_out_accuracy_of_each_part(tmp_path: Path) -> None:
    from banditree.datasets import load
    from benchmarks.quality import boosted_small_curves
    from benchmarks.quality.bandit_vs_vw import run_banditree

    out = tmp_path / "curves.jsonl"
    boosted_small_curves.main(["--datasets", "credit_a", "--seeds", "1", "--out", str(out)])
    (record,) = [json.loads(line) for line in out.read_text().splitlines()]
    assert (record["dataset"], record["seed"], record["learner"]) == ("credit_a", 0, "boosted")
    # the categorical table's stream: the loss of bandit_vs_vw's own run of the kind
    ds = load("credit_a")
    table = run_banditree(ds, {"kind": "boosted"}, 0, 5_000, categorical=True)
    assert record["loss"] == pytest.approx(table["progressive_loss"], abs=1e-12)
    blocks = record["blocks"]  # 552 rounds: five blocks of 100 and one of 52
    assert len(blocks) == 6
    assert (sum(blocks[:5]) * 100 + blocks[5] * 52) / 552 == pytest.approx(record["loss"])
    accuracy = record["accuracy"]
    assert set(accuracy) == {"100", "300", "500", "end"}
    assert set(accuracy["300"]) == {"learner", "tree", "ensemble", "base"}
    assert accuracy["end"]["learner"] == pytest.approx(table["test_accuracy"])
