"""The log formats: every writer's output reads back to the same table; bad logs are refused."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest

from banditree.learners import Decision, Feedback
from banditree.logs import format_from_path, log_row, open_log_writer, read_log


def _rows(n: int = 25) -> list[dict[str, Any]]:
    rng = np.random.default_rng(3)
    rows = []
    for i in range(n):
        context = tuple(rng.normal(size=4).tolist())
        decision = Decision(
            f"ev-{i}", context, i // 4, action=i % 3, propensity=0.2 + 0.1 * (i % 5),
            greedy_action=(i + 1) % 3,
        )  # fmt: skip
        rows.append(
            log_row(decision, Feedback(loss=float(i % 2)), offset=10 + i, time_seconds=1e9 + i)
        )
    return rows


@pytest.mark.parametrize("fmt", ["ndjson", "parquet", "csv"])
def test_each_format_round_trips(tmp_path: Path, fmt: str) -> None:
    rows = _rows()
    path = tmp_path / f"log.{fmt}"
    with open_log_writer(path) as writer:
        writer.write(rows[:10])
        writer.write(rows[10:])
    assert writer.rows_total == len(rows)
    table = read_log(path)
    assert table.n_rows == len(rows) and table.n_features == 4
    np.testing.assert_array_equal(table.context, np.array([r["context"] for r in rows]))
    np.testing.assert_array_equal(table.offset, [r["offset"] for r in rows])
    np.testing.assert_array_equal(table.action, [r["action"] for r in rows])
    np.testing.assert_array_equal(table.greedy_action, [r["greedy_action"] for r in rows])
    np.testing.assert_array_equal(table.propensity, [r["propensity"] for r in rows])
    np.testing.assert_array_equal(table.loss, [r["loss"] for r in rows])
    np.testing.assert_array_equal(table.model_version, [r["model_version"] for r in rows])
    assert list(table.event_id) == [r["event_id"] for r in rows]
    assert table.task == "classification" and table.n_actions == 3


def test_regression_rows_keep_their_probes(tmp_path: Path) -> None:
    decision = Decision("r", (1.0, 2.0), 0, value=0.5, greedy_value=0.5, probes=(1.0, 0.0))
    row = log_row(decision, Feedback(losses=(0.25, 0.75)), offset=0, time_seconds=1.0)
    for fmt in ("ndjson", "parquet", "csv"):
        with open_log_writer(tmp_path / f"reg.{fmt}") as writer:
            writer.write([row])
        table = read_log(tmp_path / f"reg.{fmt}")
        assert table.task == "regression" and table.action[0] == -1


def test_simulator_decisions_csv_reads_the_first_seed(tmp_path: Path) -> None:
    path = tmp_path / "decisions.csv"
    path.write_text(
        "seed,round,event_id,model_version,action,propensity,greedy_action,value,loss,x0,x1\n"
        "0,1,s0-r1,0,2,0.5,2,,1.0,0.5,0.25\n"
        "0,0,s0-r0,0,1,0.25,0,,0.0,1.5,2.5\n"
        "1,0,s1-r0,0,0,0.5,0,,1.0,9.0,9.0\n"
    )
    table = read_log(path)
    assert table.n_rows == 2
    np.testing.assert_array_equal(table.offset, [0, 1])  # sorted by round
    np.testing.assert_array_equal(table.context, [[1.5, 2.5], [0.5, 0.25]])
    np.testing.assert_array_equal(table.action, [1, 2])


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ('{"offset": 0, "event_id": "a", "context": [1.0], "action": 0, "propensity": 0, "loss": 0}', "propensity"),
        ('{"offset": 0, "event_id": "a", "action": 0, "loss": 0}', "'context' is required"),
        ('{"offset": 0, "event_id": "a", "context": [1.0], "action": 0}', "give 'loss'"),
        ("not json", "not JSON"),
    ],
)  # fmt: skip
def test_bad_ndjson_rows_are_refused_with_the_field(
    tmp_path: Path, body: str, message: str
) -> None:
    path = tmp_path / "bad.ndjson"
    path.write_text(body + "\n")
    with pytest.raises(ValueError, match=message):
        read_log(path)


def test_csv_with_a_zero_propensity_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "zero.csv"
    path.write_text("action,propensity,loss,x0\n0,0.5,1,0.1\n1,0.0,0,0.2\n")
    with pytest.raises(ValueError, match=r"propensity must be in \(0, 1\], got 0.0 at row 1"):
        read_log(path)


def test_unknown_extension_names_the_choices() -> None:
    with pytest.raises(ValueError, match=r"\.ndjson, \.parquet or \.csv"):
        format_from_path("log.txt")
