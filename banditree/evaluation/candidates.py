"""Candidate configurations estimated on an interaction log (the core of ``evaluate``).

Every candidate is replayed through the log (:func:`banditree.evaluation.counterfactual.replay`)
and scored (:func:`banditree.evaluation.counterfactual.score_candidate`): IPS, SNIPS and
DR on the rows after ``train_fraction``, the progressive value over the whole log, each
with a bootstrap interval and withheld where the log does not support it.  Nothing here
reads or writes files: ``banditree evaluate`` reads the log from a file and writes the
report, the service reads it from its store and keeps the report as a job's result.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from banditree.evaluation.counterfactual import bootstrap_ratio, replay, score_candidate
from banditree.evaluation.named import named_columns
from banditree.evaluation.reward import BanditLog, reward_model
from banditree.evaluation.support import SupportRules
from banditree.logs import LogTable

__all__ = ["CandidateOptions", "complete_candidate", "evaluate_candidates", "use_rejection"]

#: how the progressive value is counted: decided from the log's propensities, or forced
PROGRESSIVE_MODES = ("auto", "rejection", "importance")


@dataclass(frozen=True)
class CandidateOptions:
    """How candidates are estimated (the options of ``banditree evaluate``)."""

    train_fraction: float = 0.7
    n_bootstrap: int = 500
    progressive: str = "auto"
    rules: SupportRules = field(default_factory=SupportRules)
    seed: int = 0

    def check(self) -> CandidateOptions:
        """``ValueError`` naming the option and its bound."""
        if not 0 < self.train_fraction < 1:
            raise ValueError(f"train_fraction must be in (0, 1), got {self.train_fraction}")
        if self.n_bootstrap < 10:
            raise ValueError(f"n_bootstrap must be >= 10, got {self.n_bootstrap}")
        if self.progressive not in PROGRESSIVE_MODES:
            raise ValueError(
                f"progressive must be auto, rejection or importance, got {self.progressive!r}"
            )
        return self


def complete_candidate(label: str, config: Mapping[str, Any], table: LogTable) -> dict[str, Any]:
    """``config`` with what the log fixes filled in (``n_actions``; ``n_features`` for a
    log of numbers); ``ValueError`` starting with ``label`` when it cannot replay the log."""
    out = dict(config)
    out.setdefault("n_actions", table.n_actions)
    if table.named:  # named features: declared in the config, or inferred as served
        if out.get("features") is None and "n_features" in out:
            raise ValueError(
                f"{label}: the log's contexts are objects of named features: "
                "leave n_features out (the features are inferred from the first row "
                "learned, as the service infers them) or give the model's 'features'"
            )
    else:
        out.setdefault("n_features", table.n_features)
        if out["n_features"] != table.n_features:
            raise ValueError(
                f"{label}: n_features is {out['n_features']}, "
                f"the log's contexts have {table.n_features} values"
            )
    if int(out["n_actions"]) < table.n_actions:
        raise ValueError(
            f"{label}: n_actions is {out['n_actions']}, "
            f"the log plays actions up to {table.n_actions - 1}"
        )
    return out


def use_rejection(table: LogTable, mode: str, min_rounds: float) -> bool:
    """Whether the progressive value is rejection-sampling replay (``auto``: the log was
    played uniformly, with enough rows to keep ``10 x min_rounds`` of them)."""
    if mode == "rejection":
        return True
    if mode == "importance":
        return False
    p = table.propensity
    uniform = bool(np.ptp(p) <= 1e-9 * p.max())
    return uniform and table.n_rows * float(p.min()) >= 10 * min_rounds


def evaluate_candidates(
    table: LogTable,
    candidates: Mapping[str, Mapping[str, Any]],
    options: CandidateOptions,
    *,
    on_row: Callable[[int], Any] | None = None,
    on_stage: Callable[[str], Any] | None = None,
) -> dict[str, Any]:
    """Estimate each candidate (completed by :func:`complete_candidate`) on ``table``.

    ``on_stage(text)`` is called before the reward model's fit and before each
    candidate's replay (``replaying <name>``), ``on_row(1)`` after each row replayed
    (``len(candidates) x n_rows`` calls in all): a progress bar's or a job's counter;
    an exception they raise stops the evaluation.  Returns
    ``log`` (its shape), ``logged_policy`` (the logging policy's value on the
    evaluation rows, its progressive curve) and ``candidates`` by name.
    """
    options.check()
    if table.task != "classification":
        raise ValueError(f"{table.name}: evaluate needs a classification log (an action per row)")
    n = table.n_rows
    cut = round(n * options.train_fraction)
    if cut < 1 or cut >= n:
        raise ValueError(f"{table.name}: {n} rows are too few to split at {options.train_fraction}")
    rejection = use_rejection(table, options.progressive, options.rules.min_effective_rounds)
    completed = {name: complete_candidate(name, c, table) for name, c in candidates.items()}
    k = max(int(c["n_actions"]) for c in completed.values())
    columns, schema = (table.context, None) if not table.named else named_columns(table, cut)
    log = BanditLog(table.name, columns, table.action, table.reward(), table.propensity, k)
    if on_stage is not None:
        on_stage("fitting the reward model")
    q = reward_model(log, np.arange(cut), np.arange(cut, n))
    results: dict[str, Any] = {}
    for name, config in completed.items():
        if on_stage is not None:
            on_stage(f"replaying {name}")
        trace = replay(table, config, cut, rejection=rejection, seed=options.seed, on_row=on_row)
        cq = q if q.shape[1] == int(config["n_actions"]) else q[:, : int(config["n_actions"])]
        entry = score_candidate(
            table, trace, cut, cq,
            rules=options.rules, n_bootstrap=options.n_bootstrap, seed=options.seed,
        )  # fmt: skip
        results[name] = {"config": config, **entry}
        if trace.features is not None:
            results[name]["features"] = trace.features
    reward = table.reward()
    value, ci = bootstrap_ratio(
        reward[cut:], np.ones(n - cut), n_bootstrap=options.n_bootstrap, seed=options.seed
    )
    at, curve = _cumulative_points(np.cumsum(reward) / np.arange(1, n + 1))
    return {
        "log": {
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
            "progressive_curve": [[int(r), float(v)] for r, v in zip(at, curve, strict=True)],
        },
        "candidates": results,
    }


def _cumulative_points(values: np.ndarray, points: int = 60) -> tuple[np.ndarray, np.ndarray]:
    n = values.shape[0]
    at = np.unique(np.geomspace(1, n, num=min(points, n)).astype(np.int64))
    return at, values[at - 1]
