"""``banditree evaluate``: candidate configurations against an interaction log.

Reads the log (:func:`banditree.logs.read_log`), estimates every candidate on it
(:func:`banditree.evaluation.evaluate_candidates`), and writes ``report.json`` and
``evaluate.png``.  A log of a model with named features (JSON contexts) is replayed as
such: each candidate takes the config's ``features`` or infers them as the service does
(:mod:`banditree.learners.inferring`).  A DSJson log (candidate sets: a ranking model's
export or Personalizer's) goes to :mod:`simulate.evaluate_ranking` instead.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from banditree import __version__
from banditree.evaluation import (
    CandidateOptions,
    SupportRules,
    complete_candidate,
    evaluate_candidates,
)
from banditree.logs import LogTable, read_log
from simulate.config_files import read_configs


@dataclass
class EvaluateOptions:
    """Options of ``banditree evaluate`` (names as on the command line)."""

    log: Path
    configs: list[Path]
    out: Path
    train_fraction: float = 0.7
    n_bootstrap: int = 500
    progressive: str = "auto"
    min_effective_rounds: float = 30.0
    max_weight_share: float = 0.2
    seed: int = 0
    progress: bool = True


def load_log_table(path: Path) -> LogTable:
    """The log at ``path``; ``obd`` (no such file) is the bundled Open Bandit sample, and
    a raw Open Bandit Dataset CSV is read as OBD ships it (:func:`simulate.logged.load_obd`)."""
    from simulate.logged import is_obd_csv, load_obd

    obd_sample = str(path) == "obd" and not Path(path).exists()
    if obd_sample or is_obd_csv(path):
        from banditree.logs.table import table_from_columns

        obd = load_obd(None if obd_sample else path)
        n = len(obd.action)
        columns = {
            "context": obd.context,
            "action": obd.action,
            "propensity": obd.propensity,
            "reward": obd.reward,
        }
        return table_from_columns(obd.name, columns, n).check()
    return read_log(path)


def load_candidates(paths: list[Path], table: LogTable) -> dict[str, dict[str, Any]]:
    """Candidate configs by name (the file stem); the log fills ``n_features``/``n_actions``
    (a log of named features: ``n_actions``; the config's ``features``, else inferred)."""
    return {
        name: complete_candidate(f"--config {path}", config, table)
        for name, (path, config) in read_configs(paths).items()
    }


def evaluate(options: EvaluateOptions) -> dict[str, Any]:
    """Evaluate every candidate on the log; write ``report.json`` and ``evaluate.png``."""
    if not 0 < options.train_fraction < 1:
        raise ValueError(f"--train-fraction must be in (0, 1), got {options.train_fraction}")
    if options.n_bootstrap < 10:
        raise ValueError(f"--n-bootstrap must be >= 10, got {options.n_bootstrap}")
    if options.progressive not in ("auto", "rejection", "importance"):
        raise ValueError(
            f"--progressive must be auto, rejection or importance, got {options.progressive!r}"
        )
    from simulate.evaluate_ranking import evaluate_dsjson, is_dsjson

    if is_dsjson(options.log):  # a ranking log: candidate sets (banditree.ranking.evaluate)
        return evaluate_dsjson(
            options.log, options.configs, options.out, train_fraction=options.train_fraction,
            n_bootstrap=options.n_bootstrap, seed=options.seed,
        )  # fmt: skip
    table = load_log_table(options.log)
    if table.task != "classification":
        raise ValueError(f"{options.log}: evaluate needs a classification log (an action per row)")
    candidates = load_candidates(options.configs, table)
    n = table.n_rows
    cut = round(n * options.train_fraction)
    if cut < 1 or cut >= n:
        raise ValueError(
            f"{options.log}: {n} rows are too few to split at {options.train_fraction}"
        )
    settings = CandidateOptions(
        train_fraction=options.train_fraction,
        n_bootstrap=options.n_bootstrap,
        progressive=options.progressive,
        rules=SupportRules(options.min_effective_rounds, options.max_weight_share),
        seed=options.seed,
    )
    bar = _progress_bar(n * len(candidates), options.progress)
    try:
        found = evaluate_candidates(
            table, candidates, settings, on_row=bar.update, on_stage=bar.set_description
        )
    finally:
        bar.close()
    report = {
        "log": {"path": str(options.log), **found["log"]},
        "logged_policy": found["logged_policy"],
        "candidates": found["candidates"],
        "options": {k: _jsonable(v) for k, v in asdict(options).items()},
        "banditree_version": __version__,
    }
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2, allow_nan=False) + "\n")
    from simulate.evaluate_plot import plot_evaluation

    plot_evaluation(report, out / "evaluate.png")
    return report


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def _progress_bar(total: int, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, unit="row", disable=not enabled, mininterval=0.5)
