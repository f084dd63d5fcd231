"""``BANDITREE_ACCESS_LOG``: off by default, one JSON line per request when on."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

from tests.service.live_server import LiveServer

CONFIG = {"kind": "dgt", "n_features": 2, "n_actions": 3}


def exercise(server: LiveServer) -> None:
    with server.client() as http:
        assert http.put("/v1/models/a", json=CONFIG).status_code in (200, 201)
        assert http.post("/v1/models/a/predict", json={"context": [0.5, 1.0]}).status_code == 200
        assert http.post("/v1/models/nope/predict", json={"context": [0.5]}).status_code == 404


def access_lines(text: str) -> list[dict[str, object]]:
    records = []
    for line in text.splitlines():
        if line.startswith("{"):
            record = json.loads(line)
            if "duration_ms" in record:
                records.append(record)
    return records


def test_access_log_is_off_by_default_and_json_when_on(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    quiet = live_servers({"BANDITREE_DATA_DIR": f"{tmp_path}/quiet"})
    exercise(quiet)
    quiet.stop()
    assert access_lines(quiet.log_text()) == []
    assert "POST /v1/models" not in quiet.log_text()  # nor uvicorn's own text lines

    loud = live_servers({"BANDITREE_DATA_DIR": f"{tmp_path}/loud", "BANDITREE_ACCESS_LOG": "1"})
    exercise(loud)
    loud.stop()
    records = access_lines(loud.log_text())
    predicts = [r for r in records if r["method"] == "POST"]
    assert [(r["path"], r["status"]) for r in predicts] == [
        ("/v1/models/a/predict", 200),
        ("/v1/models/nope/predict", 404),
    ]
    for record in records:
        assert set(record) == {"time", "method", "path", "status", "duration_ms", "client"}
        assert isinstance(record["duration_ms"], float) and record["duration_ms"] >= 0.0
        assert str(record["client"]).startswith("127.0.0.1:")
