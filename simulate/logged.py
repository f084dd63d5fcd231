"""Logged bandit data: train a policy on a log, estimate its value off-policy.

A log is rounds of (context, action, reward, propensity), e.g. the Open Bandit
Dataset sample bundled with banditree (``obd``) or a ``decisions.csv`` written by
``banditree simulate --log-decisions``.  The leading ``train_fraction`` of the log
trains a learner by its own importance-weighted estimator (eq. 8 divides by the
logged propensity); on the rest, IPS, SNIPS and DR (with a logistic reward model
fitted on the training part) estimate the learned greedy policy's value, beside
the logging policy's own (on-policy) value, each with a bootstrap 95% interval.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from banditree.datasets import data_path
from banditree.evaluation.reward import BanditLog, reward_model
from banditree.evaluation.support import SupportRules, event_notes, support
from banditree.learners import Decision, Feedback, build_learner
from banditree.learners.config import default_kind
from banditree.ope import (
    DoublyRobust,
    InverseProbabilityWeighting,
    SelfNormalizedInverseProbabilityWeighting,
    check_logged_rounds,
)


@dataclass
class LoggedOptions:
    """Options of logged mode (names as on the command line)."""

    data: str
    model: str | None  # None: the LearnerConfig default (boosted)
    out: Path
    passes: int = 1
    seeds: int = 1
    explore: float | None = None
    #: learner config fields set on the command line (the rest: the config's defaults)
    config: dict[str, Any] = field(default_factory=dict)
    train_fraction: float = 0.7
    n_bootstrap: int = 1000
    progress: bool = True
    min_effective_rounds: float = 30.0
    max_weight_share: float = 0.2


#: columns that mark a raw Open Bandit Dataset CSV
OBD_COLUMNS = ("item_id", "click", "propensity_score")


def is_obd_csv(path: Path | str) -> bool:
    """Whether ``path`` is a CSV (``.csv``/``.csv.gz``) whose header has OBD's columns."""
    import gzip

    name = str(path).lower()
    if not name.endswith((".csv", ".csv.gz")) or not Path(path).is_file():
        return False
    with gzip.open(path, "rt") if name.endswith(".gz") else open(path) as handle:
        header = handle.readline().strip().split(",")
    return all(column in header for column in OBD_COLUMNS)


def load_obd(path: Path | str | None = None) -> BanditLog:
    """An Open Bandit Dataset CSV as OBD ships it; the bundled sample without ``path``.

    Columns: ``timestamp``, ``item_id``, ``position``, ``click``, ``propensity_score``,
    ``user_feature_0..3`` (hashed categories) and ``user-item_affinity_0..``.  Rows in
    timestamp order; context: the one-hot user features and the affinities; action:
    ``item_id``; reward: ``click``; propensity: ``propensity_score``.
    """
    import pandas as pd

    source = data_path("obd_random_all/all.csv.gz") if path is None else Path(path)
    frame = pd.read_csv(source)
    missing = [c for c in (*OBD_COLUMNS, "timestamp") if c not in frame.columns]
    if missing:
        raise ValueError(f"{source}: not an Open Bandit Dataset CSV (no {', '.join(missing)})")
    frame = frame.sort_values("timestamp", kind="stable")
    users = pd.get_dummies(frame.filter(like="user_feature_").astype(str), dtype=np.float64)
    affinity = frame.filter(like="user-item_affinity_").to_numpy(np.float64)
    return BanditLog(
        name="obd_random_all" if path is None else Path(path).name.split(".")[0],
        context=np.hstack([users.to_numpy(np.float64), affinity]),
        action=frame["item_id"].to_numpy(np.int64),
        reward=frame["click"].to_numpy(np.float64),
        propensity=frame["propensity_score"].to_numpy(np.float64),
        n_actions=int(frame["item_id"].max()) + 1,
    )


def load_log_csv(path: Path | str) -> BanditLog:
    """A classification log file in any format :func:`banditree.logs.read_log` reads.

    NDJSON / Parquet / CSV as ``banditree log export`` writes them, a CSV with columns
    ``action``, ``propensity``, ``reward`` (or ``loss``) and features ``x0..``, the
    simulator's ``decisions.csv`` (several seeds: the first seed is read), or a raw Open
    Bandit Dataset CSV (:func:`load_obd`).
    """
    from banditree.logs import read_log

    if is_obd_csv(path):
        return load_obd(path)

    table = read_log(path)
    if table.task != "classification":
        raise ValueError(f"{path}: logged mode needs a classification log (an action per row)")
    if table.named:
        raise ValueError(
            f"{path}: the contexts are named features; evaluate such a log with "
            "'banditree evaluate'"
        )
    return BanditLog(
        name=table.name,
        context=table.context,
        action=table.action,
        reward=table.reward(),
        propensity=table.propensity,
        n_actions=table.n_actions,
    )


def train_policy(log: BanditLog, rows: np.ndarray, config: dict[str, Any], passes: int) -> Any:
    """A learner trained on the logged ``rows`` (seeded shuffles), importance weighted."""
    learner = build_learner(config)
    rng = np.random.default_rng([int(config.get("seed", 0)), 0x106])
    for p in range(passes):
        for i in rows[rng.permutation(len(rows))]:
            decision = Decision(
                event_id=f"log-{p}-{i}",
                context=tuple(log.context[i].tolist()),
                model_version=learner.version,
                action=int(log.action[i]),
                propensity=float(log.propensity[i]),
            )
            learner.learn(decision, Feedback(loss=1.0 - float(log.reward[i])))
    return learner


def evaluate_log(options: LoggedOptions) -> dict[str, Any]:
    """Train on the log's head, estimate on its tail; write ``report.json`` and ``ope.png``."""
    model = options.model or default_kind("classification")
    log = load_obd() if options.data == "obd" else load_log_csv(options.data)
    if not 0 < options.train_fraction < 1:
        raise ValueError(f"--train-fraction must be in (0, 1), got {options.train_fraction}")
    n = len(log.reward)
    cut = round(n * options.train_fraction)
    train, evaluate = np.arange(cut), np.arange(cut, n)
    q = reward_model(log, train, evaluate)
    epsilon = options.explore or 0.0
    rules = SupportRules(options.min_effective_rounds, options.max_weight_share)
    estimators = (
        InverseProbabilityWeighting(),
        SelfNormalizedInverseProbabilityWeighting(),
        DoublyRobust(),
    )
    learned: dict[str, Any] = {"values_by_seed": {e.name: [] for e in estimators}}
    for seed in range(options.seeds):
        config: dict[str, Any] = {
            "kind": model,
            "n_features": log.context.shape[1],
            "n_actions": log.n_actions,
            "seed": seed,
            **options.config,
        }
        policy = train_policy(log, train, config, options.passes)
        greedy = policy.predict(log.context[evaluate]).astype(np.int64)
        action_dist = np.full((len(evaluate), log.n_actions), epsilon / log.n_actions)
        action_dist[np.arange(len(evaluate)), greedy] += 1.0 - epsilon
        rounds = check_logged_rounds(
            reward=log.reward[evaluate],
            action=log.action[evaluate],
            propensity=log.propensity[evaluate],
            action_dist=action_dist,
            estimated_rewards=q,
        )
        weights = rounds.importance_weights()
        effective, share, reasons = support(weights, rules, log.reward[evaluate])
        for estimator in estimators:
            learned["values_by_seed"][estimator.name].append(
                None if reasons else estimator.estimate(rounds)
            )
            if seed == 0:
                learned.update(
                    match_rate=float(np.mean(greedy == log.action[evaluate])),
                    effective_rounds=effective, max_weight_share=share,
                    supported=not reasons, refusals=reasons,
                    **event_notes(weights, log.reward[evaluate], rules),
                )  # fmt: skip
                if reasons:  # as evaluate: no claim without support
                    learned[estimator.name], learned[f"{estimator.name}_ci95"] = None, None
                    continue
                s = estimator.summary(rounds, n_bootstrap=options.n_bootstrap)
                learned[estimator.name], learned[f"{estimator.name}_ci95"] = (
                    s["value"],
                    s["value_ci95"],
                )
    rng = np.random.default_rng(0)
    tail = log.reward[evaluate]
    boot = [tail[rng.integers(0, len(tail), len(tail))].mean() for _ in range(options.n_bootstrap)]
    logging = {
        "value": float(tail.mean()),
        "value_ci95": np.quantile(boot, [0.025, 0.975]).tolist(),
    }
    report = {
        "task": "logged",
        "dataset": log.name,
        "n_train": int(cut),
        "n_test": int(n - cut),
        "n_actions": log.n_actions,
        "n_features": int(log.context.shape[1]),
        "seeds": list(range(options.seeds)),
        "model": model,
        "evaluation_epsilon": epsilon,
        "policies": {"logging": logging, model: learned},
        "options": {k: str(v) if isinstance(v, Path) else v for k, v in asdict(options).items()},
    }
    out = Path(options.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2, allow_nan=False) + "\n")
    _plot(report, out / "ope.png")
    return report


def _plot(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    learned = report["policies"][report["model"]]
    logging = report["policies"]["logging"]
    names = ["logging (on-policy)", "ips", "snips", "dr"]
    values = [logging["value"], learned["ips"], learned["snips"], learned["dr"]]
    cis = [logging["value_ci95"], learned["ips_ci95"], learned["snips_ci95"], learned["dr_ci95"]]
    fig, ax = plt.subplots(figsize=(6.0, 3.8), dpi=100)
    for i, (value, ci) in enumerate(zip(values, cis, strict=True)):
        if value is None:  # refused: too little support
            ax.annotate("refused", (i, logging["value"]), ha="center", color="0.4")
            continue
        low, high = ci
        yerr = [[max(value - low, 0.0)], [max(high - value, 0.0)]]
        ax.errorbar([i], [value], yerr=yerr, fmt="o", capsize=4, color="C0")
    ax.set_xticks(range(4), names)
    if learned.get("refusals"):
        ax.set_xlabel("refused: " + "; ".join(learned["refusals"])[:110], fontsize=7)
    ax.set_ylabel("policy value (mean reward)")
    ax.set_title(f"{report['dataset']}: learned {report['model']} policy, 95% bootstrap CI")
    ax.grid(True, alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, format="png")
    plt.close(fig)
