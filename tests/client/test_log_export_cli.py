"""``banditree log export``: refusals before and after reaching the service."""

from __future__ import annotations

from pathlib import Path

from typer.testing import CliRunner

from banditree_cli import app
from tests.service.live_server import free_port


def test_an_unknown_file_type_names_the_choices(tmp_path: Path) -> None:
    result = CliRunner().invoke(app, ["log", "export", "m", "--out", str(tmp_path / "log.txt")])
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
