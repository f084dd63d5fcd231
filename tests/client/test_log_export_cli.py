"""``banditree log export``: refusals before and after reaching the service."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from banditree_cli import app
from tests.service.live_server import free_port


def test_an_unknown_file_type_names_the_choices(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # a short path and a wide terminal: the error's box cuts a line longer than it
    # (a pytest-xdist worker's temporary directory is longer than pytest's own)
    monkeypatch.chdir(tmp_path)
    result = CliRunner().invoke(
        app, ["log", "export", "m", "--out", "log.txt"], env={"COLUMNS": "200"}
    )
    assert result.exit_code == 2
    assert ".ndjson, .parquet or .csv" in result.output


def test_an_unreachable_service_is_reported_after_the_retries(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    result = CliRunner().invoke(
        app,
        ["log", "export", "m", "--out", str(tmp_path / "log.csv"), "--server", url,
         "--no-progress"],
    )  # fmt: skip
    assert result.exit_code == 2
    assert "no answer after 4 attempts" in result.output
