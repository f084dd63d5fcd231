"""``benchmarks.speed.startup`` measures a real ``banditree serve`` (figures, not a timed test)."""

from __future__ import annotations

import json
from pathlib import Path

from benchmarks.speed.startup import GOALS, main


def test_startup_benchmark_reports_every_figure(tmp_path: Path) -> None:
    out = tmp_path / "startup.json"
    assert main(["--repeat", "1", "--settle", "0.2", "--json", str(out)]) == 0
    (figures,) = json.loads(out.read_text()).values()
    assert set(GOALS) <= set(figures)
    assert all(figures[key] > 0 for key in GOALS)
    # the served process holds the interpreter, numpy and the web stack: tens of MB at least
    assert 20 < figures["idle_rss_mb"] <= figures["one_dgt_rss_mb"]
