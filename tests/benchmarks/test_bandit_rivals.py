"""The rivals benchmark: its report per half and a tiny real run."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from benchmarks.bandit_rivals import main
from benchmarks.bandit_rivals_report import write_report


def record(dataset: str, learner: str, loss: float, family: str, **extra: Any) -> dict[str, Any]:
    return {
        "dataset": dataset,
        "seed": 0,
        "n_actions": 3,
        "table": "numeric",
        "learner": learner,
        "family": family,
        "rounds": 100,
        "progressive_loss": loss,
        "cpu_per_round": 0.002,
        **extra,
    }


def test_report_ratios_to_the_best_rival_per_half(tmp_path: Path) -> None:
    records = []
    for dataset, ours, vw_raw, vw_z, teucb in (
        ("satimage", 0.2, 0.3, 0.25, 0.4),  # tuning: 0.2 / 0.25
        ("letter", 0.3, 0.5, 0.6, 0.2),  # check: 0.3 / 0.2 (TEUCB)
        ("nursery", 0.1, 0.2, 0.2, 0.2),  # check: 0.1 / 0.2
    ):
        records += [
            record(dataset, "default", ours, "banditree"),
            record(dataset, "vw_adf_regcbopt", vw_raw, "vw", form="raw"),
            record(dataset, "vw_adf_regcbopt", vw_z, "vw", form="z"),
            record(dataset, "teucb", teucb, "tree_ensemble", cpu_per_round=0.004),
        ]
    markdown = write_report(records, tmp_path)
    assert (
        "| satimage | 3 | 100 | 1 | 0.2000 | 0.2500 (z) | 0.4000 | vw_adf_regcbopt | 0.800 |"
        in (markdown)
    )
    assert "| letter | 3 | 100 | 1 | 0.3000 | 0.5000 | 0.2000 | teucb | **1.500** | 0.600 |" in (
        markdown
    )
    # check half: sqrt(1.5 * 0.5)
    assert "| numeric | check | 2 | 0.866 | 1.500 |" in markdown
    assert "| numeric | tuning | 1 | 0.800 | 0.800 |" in markdown
    assert "behind the best rival on letter 1.500." in markdown
    assert "| letter | 2.000 | 2.000 | 4.000 |" in markdown  # CPU ms per round
    assert markdown.index("### tuning half") < markdown.index("### check half")


def test_tiny_run_of_a_candidate_learner(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("vowpalwabbit")
    pytest.importorskip("lightgbm")
    args = ["--datasets", "segmentation", "river_bananas", "--seeds", "1", "--max-rounds", "150"]
    args += ["--vw", "vw_adf_regcbopt", "--no-progress", "--out", str(tmp_path)]
    main([*args, "--tables", "numeric", "external", "--learner", '{"height": 4}'])
    lines = (tmp_path / "results.jsonl").read_text().splitlines()
    # per set: the constant, the candidate, RegCB-opt raw and z-scored, TEUCB, TETS
    assert len(lines) == 12
    out = capsys.readouterr().out
    assert "# candidate against its strongest rivals" in out
    assert "| segmentation | 7 | 150 | 1 |" in out and "| river_bananas | 2 | 150 | 1 |" in out
    assert "| numeric | tuning | 1 |" in out and "| external | external | 1 |" in out


def test_bad_learner_json_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["--learner", "{kind", "--out", str(tmp_path)])
    assert "--learner is not JSON" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["--learner", "[1]", "--out", str(tmp_path)])
    assert "--learner must be a JSON object" in capsys.readouterr().err


def test_half_runs_only_that_half_of_the_bundled_sets(tmp_path: Path) -> None:
    pytest.importorskip("vowpalwabbit")
    from benchmarks.protocol import TUNING

    args = ["--half", "tuning", "--datasets", "segmentation", "letter", "--seeds", "1"]
    args += ["--max-rounds", "120", "--vw", "--rivals", "--no-progress", "--out", str(tmp_path)]
    main(args)
    sets = {
        line.split('"dataset": "')[1].split('"')[0]
        for line in (tmp_path / "results.jsonl").read_text().splitlines()
    }
    assert sets == {"segmentation"} and "segmentation" in TUNING  # letter is in the check half
