"""``banditree log export`` never destroys the file it fails to write, in any format."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from typer.testing import CliRunner

from banditree.client import Client
from banditree.logs import LogWriter, read_log
from banditree_cli import app as cli
from tests.service.live_server import LiveServer

FORMATS = ("ndjson", "parquet", "csv")
PRECIOUS = b"an earlier export the user keeps\n" * 2000


def _export(server: LiveServer, name: str, out: Path) -> tuple[int, str]:
    result = CliRunner().invoke(
        cli, ["log", "export", name, "--out", str(out), "--server", server.url, "--no-progress"]
    )
    return result.exit_code, result.output


def test_a_failed_export_leaves_the_existing_file_and_no_stub(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    server = live_servers({"BANDITREE_DATA_DIR": str(tmp_path / "data")})
    with Client(server.url) as client:
        client.create_model("clicks", {"kind": "dgt", "n_features": 3, "n_actions": 2})
        for i in range(20):
            decision = client.predict("clicks", [i / 20, 1.0, -1.0])
            client.feedback("clicks", decision.event_id, loss=float(i % 2))
    out_dir = tmp_path / "exports"
    out_dir.mkdir()
    for fmt in FORMATS:
        out = out_dir / f"log.{fmt}"
        out.write_bytes(PRECIOUS)
        code, output = _export(server, "clickz", out)  # a typo: 404
        assert code == 2 and "clickz" in output, output
        assert out.read_bytes() == PRECIOUS, fmt
        assert sorted(p.name for p in out_dir.iterdir()) == sorted(
            f"log.{f}" for f in FORMATS[: FORMATS.index(fmt) + 1]
        ), "a partial file was left behind"
        fresh = out_dir / f"new.{fmt}"
        code, output = _export(server, "clickz", fresh)
        assert code == 2 and not fresh.exists(), output
        # the right name replaces the earlier export, again without leftovers
        code, output = _export(server, "clicks", out)
        assert code == 0, output
        assert len(read_log(out).offset) == 20
    assert sorted(p.name for p in out_dir.iterdir()) == sorted(f"log.{f}" for f in FORMATS)


@pytest.mark.parametrize("fmt", FORMATS)
def test_a_write_interrupted_midway_keeps_the_old_file(tmp_path: Path, fmt: str) -> None:
    out = tmp_path / f"log.{fmt}"
    out.write_bytes(PRECIOUS)
    row = {
        "offset": 1, "event_id": "e1", "time_seconds": 1.0, "model_version": 0,
        "context": [0.1, 0.2], "action": 0, "propensity": 0.5, "greedy_action": 0,
        "loss": 1.0, "value": None, "greedy_value": None, "perturbation": 0, "probes": None,
        "losses": None, "source": "feedback",
    }  # fmt: skip
    with pytest.raises(ValueError, match="context has 3 values"):
        with LogWriter(out) as writer:
            writer.write([row])
            writer.write([{**row, "context": [1.0, 2.0, 3.0]}])
    assert out.read_bytes() == PRECIOUS
    assert [p.name for p in tmp_path.iterdir()] == [out.name]
    with LogWriter(out) as writer:
        writer.write([row])
    assert [p.name for p in tmp_path.iterdir()] == [out.name]
    assert out.read_bytes() != PRECIOUS
