"""``benchmarks.speed.request_path`` drives the whole app in process (figures, not a timed test)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from benchmarks.speed.request_path import per_request
from benchmarks.speed.service_http import BATCH, CONTEXT


@pytest.mark.parametrize("body", [{"context": CONTEXT}, {"contexts": BATCH[:4]}])
def test_every_predict_is_answered_and_costs_cpu(
    body: dict[str, object], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BANDITREE_DATA_DIR", str(tmp_path))
    figures = asyncio.run(per_request(24, 3, json.dumps(body).encode(), 2))
    assert len(figures) == 2 and all(v > 0 for v in figures)


def test_a_refused_predict_fails_the_benchmark(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BANDITREE_DATA_DIR", str(tmp_path))
    with pytest.raises(RuntimeError, match="statuses other than 200"):
        asyncio.run(per_request(4, 1, json.dumps({"context": [1.0]}).encode(), 1))
