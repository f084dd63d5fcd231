"""Per-seed traces to ``report.json``, ``curves.csv``, ``decisions.csv`` (README, "Simulator")."""

from __future__ import annotations

import csv
import json
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from simulate.intervals import summarise
from simulate.runner import SeedTrace


@dataclass
class LearnerRun:
    """One competitor's traces over all seeds, with what describes it in the report."""

    name: str
    kind: str
    feedback: str
    queries_per_round: int
    traces: list[SeedTrace]
    config: dict[str, Any] = field(default_factory=dict)


def metric_names(task: str) -> tuple[str, str]:
    """``(progressive figure, held-out figure)`` names for ``task``."""
    if task == "classification":
        return "progressive_accuracy", "test_accuracy"
    return "progressive_rmse", "test_rmse"


#: the range each figure can take; a t-interval is clipped to it (an accuracy band
#: never leaves [0, 1], an RMSE band never goes below 0)
FIGURE_BOUNDS: dict[str, tuple[float, float]] = {
    "progressive_accuracy": (0.0, 1.0),
    "test_accuracy": (0.0, 1.0),
    "progressive_rmse": (0.0, math.inf),
    "test_rmse": (0.0, math.inf),
    "progressive_mean_loss": (0.0, math.inf),
    "rounds_per_second": (0.0, math.inf),
}


def _figure(out: dict[str, Any], name: str, per_seed: list[float]) -> None:
    mean, ci = summarise(per_seed)
    lo, hi = FIGURE_BOUNDS.get(name, (-math.inf, math.inf))
    out[name] = mean
    out[f"{name}_ci95"] = [None if b is None else min(max(b, lo), hi) for b in ci]


def _progressive(task: str, trace: SeedTrace) -> float:
    m = float(trace.hits.mean())
    return m if task == "classification" else math.sqrt(m)


def _cumulative_mean_loss(trace: SeedTrace) -> np.ndarray:
    cum = np.cumsum(trace.losses)
    return np.asarray(cum[trace.eval_rounds - 1] / trace.eval_rounds)


def summarise_learner(
    run: LearnerRun,
    *,
    task: str,
    reference: LearnerRun,
    constant_losses: list[float],
) -> dict[str, Any]:
    """The report entry of one learner: final figures, their 95% intervals, curves."""
    progressive, held_out = metric_names(task)
    out: dict[str, Any] = {"kind": run.kind, "feedback": run.feedback, "config": run.config}
    ref_loss = [float(t.losses.mean()) for t in reference.traces]
    losses = [float(t.losses.mean()) for t in run.traces]
    _figure(out, "progressive_mean_loss", losses)
    _figure(out, progressive, [_progressive(task, t) for t in run.traces])
    _figure(out, "regret", [a - b for a, b in zip(losses, ref_loss, strict=True)])
    _figure(
        out, "regret_vs_constant", [a - c for a, c in zip(losses, constant_losses, strict=True)]
    )
    _figure(out, held_out, [float(t.test_scores[-1]) for t in run.traces])
    _figure(out, "rounds_per_second", [len(t.losses) / max(t.seconds, 1e-9) for t in run.traces])
    rounds = run.traces[0].eval_rounds
    out["rounds_total"] = int(rounds[-1])
    out["queries_total"] = int(rounds[-1]) * run.queries_per_round
    scores = np.stack([t.test_scores for t in run.traces])  # (seeds, points)
    mine = np.stack([_cumulative_mean_loss(t) for t in run.traces])
    ref = np.stack([_cumulative_mean_loss(t) for t in reference.traces])
    out["curve"], out["regret_curve"] = [], []
    for k, r in enumerate(rounds):
        point: dict[str, Any] = {"queries": int(r) * run.queries_per_round}
        _figure(point, held_out, scores[:, k].tolist())
        out["curve"].append(point)
        regret_point: dict[str, Any] = {"queries": int(r) * run.queries_per_round}
        _figure(regret_point, "regret", (mine[:, k] - ref[:, k]).tolist())
        out["regret_curve"].append(regret_point)
    return out


def build_report(
    runs: list[LearnerRun],
    *,
    reference: str,
    task: str,
    header: Mapping[str, Any],
    constant_losses: list[float],
) -> dict[str, Any]:
    """``report.json``'s content: ``header`` fields, the constant-action loss, ``learners``."""
    by_name = {run.name: run for run in runs}
    report: dict[str, Any] = dict(header)
    _figure(report, "best_constant_mean_loss", constant_losses)
    report["reference"] = reference
    report["learners"] = {
        run.name: summarise_learner(
            run, task=task, reference=by_name[reference], constant_losses=constant_losses
        )
        for run in runs
    }
    return report


def _json_ready(value: Any) -> Any:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {k: _json_ready(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_ready(v) for v in value]
    if isinstance(value, np.generic):
        return _json_ready(value.item())
    return value


def write_report(report: dict[str, Any], out_dir: Path) -> Path:
    """Write ``report.json`` (strict JSON: non-finite numbers become ``null``)."""
    path = out_dir / "report.json"
    path.write_text(json.dumps(_json_ready(report), indent=2, allow_nan=False) + "\n")
    return path


def write_curves_csv(report: dict[str, Any], task: str, out_dir: Path) -> Path:
    """``curves.csv``: one row per learner, query count and metric (mean and 95% bounds)."""
    _, held_out = metric_names(task)
    path = out_dir / "curves.csv"
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(["learner", "queries", "metric", "mean", "ci95_low", "ci95_high"])
        for name, entry in report["learners"].items():
            for key, metric in (("curve", held_out), ("regret_curve", "regret")):
                for point in entry[key]:
                    low, high = point[f"{metric}_ci95"]
                    writer.writerow([name, point["queries"], metric, point[metric], low, high])
    return path


def write_decisions_csv(traces: list[SeedTrace], X: np.ndarray, out_dir: Path) -> Path:
    """``decisions.csv``: every logged decision of ``traces`` with its loss and context."""
    path = out_dir / "decisions.csv"
    with path.open("w", newline="") as fh:
        writer = csv.writer(fh)
        writer.writerow(
            [
                "seed",
                "round",
                "event_id",
                "model_version",
                "action",
                "propensity",
                "greedy_action",
                "value",
                "loss",
                *[f"x{j}" for j in range(X.shape[1])],
            ]
        )
        for trace in traces:
            for item in trace.decisions:
                d = item["decision"]
                writer.writerow(
                    [
                        trace.seed,
                        item["round"],
                        d.event_id,
                        d.model_version,
                        d.action,
                        d.propensity,
                        d.greedy_action,
                        d.value,
                        item["loss"],
                        *X[item["row"]].tolist(),
                    ]
                )
    return path
