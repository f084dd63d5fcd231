"""Bandit classification under concept drift: banditree's default against Vowpal Wabbit.

Usage::

    python -m benchmarks.quality.bandit_drift [--streams letter river_sea ...]
        [--kinds abrupt gradual recurring] [--drift-at 10000] [--seeds 2]
        [--variants default ...] [--vw vw_bag5 ...] [--raw vw_bag5 ...] [--jobs 1]
        [--out runs/bandit_drift]

Streams (:mod:`benchmarks.quality.bandit_drift_streams`): every bundled classification set with
at least 5,000 rows, its training split replayed in seeded orders, the label-to-action
map shifting by one at round ``--drift-at`` N (abrupt), rising to the new map linearly
over N / 2 rounds (gradual), or shifting at N and coming back at 2 N (recurring); and
River's SEA concepts (abrupt, gradual through ``ConceptDriftStream``, recurring) and
rotating hyperplane (continuous).  A stream runs 2 N rounds (3 N when recurring).  Each
round a learner plays an action and is told only its 0/1 loss; every competitor of a
seed sees the same stream and samples its pmf with the same uniform numbers.

Competitors: banditree's default (and the named :data:`VARIANTS`); VW ``--cb_explore K
--bag 5``, ``--cb_explore_adf --squarecb``, ``--cb_explore K --epsilon 0.05`` and
``--cb_explore_adf --epsilon_decay`` (champion/challenger between a fresh and an old
learner), each on z-scored features and, for those ``--raw`` names (default: all), on
raw ones.  Reported (:mod:`benchmarks.quality.bandit_drift_report`):
pre-drift loss, post-drift loss, recovery rounds (a 500-round average back within 0.05
of the run's own pre-drift loss), the rounds until such an average first left that band
(when the change first shows), worst 500-round average after the change, ratios to
the best VW and to VW bag5's recovery in the same run; ``drift.png``, the moving loss
around the change.  ``--report-only`` re-renders from ``results.jsonl``.
"""

from __future__ import annotations

import argparse
import base64
import json
from pathlib import Path
from typing import Any

import numpy as np

from banditree.learners import Feedback, build_learner
from benchmarks.quality.bandit_drift_report import drift_figures, write_report
from benchmarks.quality.bandit_drift_streams import (
    RIVER_STREAMS,
    DriftStream,
    bundled_drift_sets,
    make_stream,
)
from benchmarks.quality.bandit_vs_vw import run_tasks
from simulate.drift import DRIFT_KINDS, DriftKind, default_length
from simulate.vw import VWPolicy

#: banditree variants (overrides of the LearnerConfig defaults); ``default`` is none
VARIANTS: dict[str, dict[str, Any]] = {
    "default": {},
    # the default before the change detector (issue 27's "before")
    "no_detector": {"drift_threshold": 0},
    # the detector without the ridge challenger that follows it (the default before it)
    "no_challenger": {"drift_challenger": 0},
    # the per-action bias and linear term by AdaGrad instead of the ridge (a step that
    # forgets by itself), with the detector
    "adagrad": {"linear_update": "adagrad", "context_clip": 0.0},
    # a faster, noisier detector
    "detector10": {"drift_threshold": 10.0},
    # the detector without its jump test, and a signal that keeps the tree's leaves
    # (together: the default before them)
    "no_jump": {"drift_jump_threshold": 0},
    "no_leaf_shrink": {"drift_leaf_shrink": 1.0},
    "no_jump_shrink": {"drift_jump_threshold": 0, "drift_leaf_shrink": 1.0},
    # the boosted kind (its dgt starter keeps the detector), at its defaults
    "boosted": {"kind": "boosted"},
    # the same, its window and ensemble kept when the tree's detector fires
    "boosted_no_restart": {"kind": "boosted", "options": {"restart_on_drift": False}},
}
#: VW's algorithms on drifting streams ({k}: the number of actions)
VW_DRIFT: dict[str, str] = {
    "vw_bag5": "--cb_explore {k} --bag 5",
    "vw_squarecb": "--cb_explore_adf --squarecb -q sa",
    "vw_eps0.05": "--cb_explore {k} --epsilon 0.05",
    "vw_epsilon_decay": "--cb_explore_adf --epsilon_decay --epsilon 0.05 -q sa",
}


def run_banditree(s: DriftStream, overrides: dict[str, Any], seed: int) -> np.ndarray:
    """The 0/1 loss of every round of a banditree learner on ``s``."""
    config = {"n_features": s.x.shape[1], "n_actions": s.n_actions, **overrides, "seed": seed}
    learner = build_learner(config)
    losses = np.empty(len(s.y))
    for t, (row, label) in enumerate(zip(s.x, s.y.tolist(), strict=True)):
        decision = learner.act(row)
        loss = float(decision.action != label)
        learner.learn(decision, Feedback(loss=loss))
        losses[t] = loss
    return losses


def run_vw(s: DriftStream, algorithm: str, standardized: bool, seed: int) -> np.ndarray:
    """The 0/1 loss of every round of a VW algorithm on raw or z-scored ``s``."""
    x = (s.x - s.mean) / s.sd if standardized else s.x
    policy = VWPolicy(s.n_actions, algorithm, seed)
    losses = np.empty(len(s.y))
    for t, (row, label, u) in enumerate(zip(x.tolist(), s.y.tolist(), s.uniforms, strict=True)):
        example = policy.example(row)
        pmf = policy.pmf(example)
        action = min(
            int(np.searchsorted(np.cumsum(pmf), u * pmf.sum(), side="right")), len(pmf) - 1
        )
        loss = float(action != label)
        policy.learn(example, action, float(pmf[action]), loss)
        losses[t] = loss
    policy.close()
    return losses


def pack_losses(losses: np.ndarray) -> str:
    """0/1 losses as base64 bits (the report recomputes its figures from them)."""
    return base64.b64encode(np.packbits(losses.astype(bool)).tobytes()).decode()


def unpack_losses(packed: str, n: int) -> np.ndarray:
    bits = np.unpackbits(np.frombuffer(base64.b64decode(packed), dtype=np.uint8))
    return bits[:n].astype(np.float64)


def _record(head: dict[str, Any], learner: str, losses: np.ndarray) -> dict[str, Any]:
    at, kind = head["at"], head["kind"]
    return {
        **head, "learner": learner, "rounds": len(losses), "losses": pack_losses(losses),
        **drift_figures(losses, at, kind),
    }  # fmt: skip


def run_task(task: dict[str, Any]) -> list[dict[str, Any]]:
    """Every competitor on one (stream, kind, seed)."""
    name, kind, seed, at = task["stream"], task["kind"], task["seed"], task["at"]
    s = make_stream(name, kind, at, default_length(kind, at), seed)
    head = {"stream": name, "kind": kind, "seed": seed, "at": at, "n_actions": s.n_actions}
    records = []
    for variant in task["variants"]:
        records.append(_record(head, variant, run_banditree(s, VARIANTS[variant], seed)))
    for algorithm in task["vw"]:
        for form in ("raw", "z") if algorithm in task["raw"] else ("z",):
            losses = run_vw(s, VW_DRIFT[algorithm], form == "z", seed)
            records.append(_record(head, f"{algorithm}_{form}", losses))
    return records


def tasks_for(args: argparse.Namespace) -> list[dict[str, Any]]:
    out = []
    for stream in args.streams:
        kinds: list[DriftKind] = ["abrupt"] if stream == "river_hyperplane" else args.kinds
        for kind in kinds:
            for seed in range(args.first_seed, args.first_seed + args.seeds):
                out.append(
                    {"stream": stream, "kind": kind, "seed": seed, "at": args.drift_at,
                     "variants": args.variants, "vw": args.vw, "raw": args.raw}
                )  # fmt: skip
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", nargs="+", default=None, help="default: all")
    parser.add_argument("--kinds", nargs="+", default=list(DRIFT_KINDS), choices=DRIFT_KINDS)
    parser.add_argument("--drift-at", type=int, default=10_000)
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--first-seed", type=int, default=0)
    parser.add_argument("--variants", nargs="+", default=["default"], choices=list(VARIANTS))
    parser.add_argument("--vw", nargs="*", default=list(VW_DRIFT), choices=list(VW_DRIFT))
    parser.add_argument(
        "--raw", nargs="*", default=list(VW_DRIFT), choices=list(VW_DRIFT),
        help="the VW algorithms also run on raw features (all run z-scored)",
    )  # fmt: skip
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--out", type=Path, default=Path("runs/bandit_drift"))
    parser.add_argument("--report-only", action="store_true", help="re-render from results")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    if args.drift_at < 2500:
        parser.error("--drift-at must be >= 2500 (the figures use 2,000 rounds before it)")
    known = [*bundled_drift_sets(), *RIVER_STREAMS]
    args.streams = args.streams or known
    unknown = sorted(set(args.streams) - set(known))
    if unknown:
        parser.error(f"unknown streams {unknown}; known: {', '.join(known)}")
    args.out.mkdir(parents=True, exist_ok=True)
    results_path = args.out / "results.jsonl"
    if not args.report_only:
        tasks = tasks_for(args)
        run_tasks(
            run_task, tasks, results_path, args.jobs, "stream x kind x seed", args.no_progress
        )
    records = [json.loads(line) for line in results_path.read_text().splitlines() if line]
    for r in records:  # the figures of the current definition, from the stored losses
        if "losses" in r:
            r.update(drift_figures(unpack_losses(r["losses"], r["rounds"]), r["at"], r["kind"]))
    print(write_report(records, args.out))


if __name__ == "__main__":
    main()
