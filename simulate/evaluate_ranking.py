"""``banditree evaluate`` on a DSJson log (a ranking model's, or Personalizer's export).

Each candidate configuration (a ranking model's config; ``task`` may be left out) is
trained on the first ``--train-fraction`` of the log and estimated on the rest by
:func:`banditree.ranking.evaluate.evaluate_ranking` (IPS, SNIPS and DR of its policy and
of its greedy choice), beside the logged policy's value; ``report.json`` holds it all.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from banditree import __version__
from banditree.logs.dsjson import read_dsjson
from banditree.ranking.evaluate import evaluate_ranking
from simulate.config_files import read_configs


def is_dsjson(path: Path) -> bool:
    """A ``.dsjson`` file, or JSON lines whose first holds ``_label_cost`` (a DSJson event)."""
    path = Path(path)
    if path.suffix.lower() == ".dsjson":
        return True
    if not path.is_file() or path.suffix.lower() not in (".json", ".jsonl", ".ndjson"):
        return False
    with path.open("rb") as lines:
        first = lines.readline(1 << 20)
    return b'"_label_cost"' in first and b'"_multi"' in first


def evaluate_dsjson(
    log: Path,
    configs: list[Path],
    out: Path,
    *,
    train_fraction: float,
    n_bootstrap: int,
    seed: int,
) -> dict[str, Any]:
    """Evaluate every candidate configuration on a DSJson log; write ``report.json``."""
    rows = list(read_dsjson(log))
    if not rows:
        raise ValueError(f"{log}: the log has no rows")
    results: dict[str, Any] = {}
    logged: dict[str, Any] = {}
    for name, (_, config) in read_configs(configs).items():
        entry = evaluate_ranking(
            rows, config, train_fraction=train_fraction, n_bootstrap=n_bootstrap, seed=seed,
        )  # fmt: skip
        logged = entry.pop("logged_policy")
        results[name] = entry
    report = {
        "log": {"path": str(log), "format": "dsjson", "n_rows": len(rows)},
        "logged_policy": logged,
        "candidates": results,
        "banditree_version": __version__,
    }
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2, allow_nan=False) + "\n")
    return report
