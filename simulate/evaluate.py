"""``banditree evaluate``: candidate configurations against an interaction log.

Reads the log (:func:`banditree.logs.read_log`), replays it through every candidate
(:mod:`simulate.counterfactual`), and writes ``report.json`` and ``evaluate.png``.  A
log of a model with named features (JSON contexts) is replayed as such: each candidate
takes the config's ``features`` or infers them as the service does
(:mod:`banditree.learners.inferring`); the reward model of the doubly robust estimate
reads the contexts encoded by :func:`simulate.evaluate_named.named_columns`.  A
DSJson log (candidate sets: a ranking model's export or Personalizer's) goes to
:mod:`simulate.evaluate_ranking` instead.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from banditree import __version__
from banditree.logs import LogTable, read_log
from simulate.config_files import read_configs
from simulate.counterfactual import SupportRules, bootstrap_ratio, replay, score_candidate
from simulate.evaluate_named import named_columns
from simulate.logged import BanditLog, reward_model


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
    candidates: dict[str, dict[str, Any]] = {}
    for name, (path, config) in read_configs(paths).items():
        config.setdefault("n_actions", table.n_actions)
        if table.named:  # named features: declared in the config, or inferred as served
            if config.get("features") is None and "n_features" in config:
                raise ValueError(
                    f"--config {path}: the log's contexts are objects of named features: "
                    "leave n_features out (the features are inferred from the first row "
                    "learned, as the service infers them) or give the model's 'features'"
                )
        else:
            config.setdefault("n_features", table.n_features)
        if not table.named and config["n_features"] != table.n_features:
            raise ValueError(
                f"--config {path}: n_features is {config['n_features']}, "
                f"the log's contexts have {table.n_features} values"
            )
        if int(config["n_actions"]) < table.n_actions:
            raise ValueError(
                f"--config {path}: n_actions is {config['n_actions']}, "
                f"the log plays actions up to {table.n_actions - 1}"
            )
        candidates[name] = config
    return candidates


def _use_rejection(table: LogTable, mode: str, min_rounds: float) -> bool:
    if mode == "rejection":
        return True
    if mode == "importance":
        return False
    if mode != "auto":
        raise ValueError(f"--progressive must be auto, rejection or importance, got {mode!r}")
    p = table.propensity
    uniform = bool(np.ptp(p) <= 1e-9 * p.max())
    return uniform and table.n_rows * float(p.min()) >= 10 * min_rounds


def evaluate(options: EvaluateOptions) -> dict[str, Any]:
    """Evaluate every candidate on the log; write ``report.json`` and ``evaluate.png``."""
    if not 0 < options.train_fraction < 1:
        raise ValueError(f"--train-fraction must be in (0, 1), got {options.train_fraction}")
    if options.n_bootstrap < 10:
        raise ValueError(f"--n-bootstrap must be >= 10, got {options.n_bootstrap}")
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
    rules = SupportRules(options.min_effective_rounds, options.max_weight_share)
    rejection = _use_rejection(table, options.progressive, options.min_effective_rounds)
    k = max(int(c["n_actions"]) for c in candidates.values())
    columns, schema = (table.context, None) if not table.named else named_columns(table, cut)
    log = BanditLog(table.name, columns, table.action, table.reward(), table.propensity, k)
    q = reward_model(log, np.arange(cut), np.arange(cut, n))
    bar = _progress_bar(n * len(candidates), options.progress)
    results: dict[str, Any] = {}
    try:
        for name, config in candidates.items():
            bar.set_description(name)
            trace = replay(
                table, config, cut, rejection=rejection, seed=options.seed, on_row=bar.update
            )
            cq = q if q.shape[1] == int(config["n_actions"]) else q[:, : int(config["n_actions"])]
            entry = score_candidate(
                table,
                trace,
                cut,
                cq,
                rules=rules,
                n_bootstrap=options.n_bootstrap,
                seed=options.seed,
            )
            results[name] = {"config": config, **entry}
            if trace.features is not None:
                results[name]["features"] = trace.features
    finally:
        bar.close()
    reward = table.reward()
    ones = np.ones(n - cut)
    value, ci = bootstrap_ratio(
        reward[cut:], ones, n_bootstrap=options.n_bootstrap, seed=options.seed
    )
    report = {
        "log": {
            "path": str(options.log),
            "name": table.name,
            "n_rows": n,
            "n_train": cut,
            "n_evaluation": n - cut,
            "n_features": table.n_features if schema is None else len(schema.features),
            **({} if schema is None else {"features": schema.to_json()}),
            "n_actions": table.n_actions,
            "propensity_min": float(table.propensity.min()),
            "propensity_max": float(table.propensity.max()),
        },
        "logged_policy": {
            "value": value,
            "value_ci95": ci,
            "progressive_value": float(reward.mean()),
            "progressive_curve": [
                [int(r), float(v)]
                for r, v in zip(
                    *_cumulative_points(np.cumsum(reward) / np.arange(1, n + 1)), strict=True
                )
            ],
        },
        "candidates": results,
        "options": {k: _jsonable(v) for k, v in asdict(options).items()},
        "banditree_version": __version__,
    }
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2, allow_nan=False) + "\n")
    from simulate.evaluate_plot import plot_evaluation

    plot_evaluation(report, out / "evaluate.png")
    return report


def _cumulative_points(values: np.ndarray, points: int = 60) -> tuple[np.ndarray, np.ndarray]:
    n = values.shape[0]
    at = np.unique(np.geomspace(1, n, num=min(points, n)).astype(np.int64))
    return at, values[at - 1]


def _jsonable(value: Any) -> Any:
    if isinstance(value, Path):
        return str(value)
    if isinstance(value, list):
        return [_jsonable(v) for v in value]
    return value


def _progress_bar(total: int, enabled: bool) -> Any:
    from tqdm import tqdm

    return tqdm(total=total, unit="row", disable=not enabled, mininterval=0.5)
