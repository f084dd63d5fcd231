"""Ranking with candidate features: banditree's ranking default against VW's ``cb_explore_adf``.

Usage::

    python -m benchmarks.quality.ranking_vs_vw [--datasets letter pendigits] [--seeds 2]
        [--rounds 10000] [--candidates 10] [--out runs/ranking_vs_vw]

Ranking streams built from the bundled classification sets (the same stream and the same
sampling uniforms for every learner of a seed):

* every class is a candidate action described by features: its centroid over a
  *catalogue* slice of the data (the first 10% of rows, never streamed), projected on the
  catalogue's top :data:`ACTION_DIM` principal directions; contexts are z-scored with
  the catalogue's statistics;
* each round offers ``--candidates`` of the classes (the row's own class and others
  drawn at random, in random order); the reward is 1 for the row's class, else 0;
* a quarter of the classes (at least one) are held back: their rows are skipped and they
  are never offered in the first half of the stream, so the second half measures cold
  start on actions never seen (reward on their rows in the first ``--cold-window``
  rounds after the half, beside the reward on seen classes' rows there).

Competitors: the :class:`~banditree.ranking.RankingLearner` defaults, and VW
``--cb_explore_adf`` with ``--squarecb``, ``--squarecb -q ca``, ``--epsilon 0.05`` and
``--bag 5`` (each also with ``-q ca``), context in namespace ``c``, candidate features in
namespace ``a``.  Reported: progressive loss (1 - reward, exploration included), the
ratio default / best VW per stream and its geometric mean, cold-start rewards, and
rounds per second.  Writes ``results.json`` and ``report.md`` in ``--out``.
"""

from __future__ import annotations

import argparse
import json
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from banditree.explore import sample_action
from banditree.ranking import RankingConfig, RankingLearner
from simulate.ranking import vw_text
from simulate.ranking_streams import Stream, build_stream, play

DATASETS = ("letter", "pendigits", "satimage", "optdigits", "segmentation", "texture", "krkopt")
VW_ALGORITHMS: dict[str, str] = {
    "vw_squarecb": "--cb_explore_adf --squarecb",
    "vw_squarecb_q": "--cb_explore_adf --squarecb -q ca",
    "vw_eps0.05": "--cb_explore_adf --epsilon 0.05",
    "vw_eps0.05_q": "--cb_explore_adf --epsilon 0.05 -q ca",
    "vw_bag5": "--cb_explore_adf --bag 5",
    "vw_bag5_q": "--cb_explore_adf --bag 5 -q ca",
}


Runner = Callable[[Stream, int], dict[str, Any]]


def run_banditree(stream: Stream, seed: int) -> dict[str, Any]:
    learner = RankingLearner(
        RankingConfig(stream.contexts.shape[1], stream.class_features.shape[1], seed=seed)
    )
    return _played(stream, lambda c, f, ids, u: _bt_act(learner, c, f, ids, u), learner)


def _bt_act(learner: RankingLearner, c, f, ids, u):  # type: ignore[no-untyped-def]
    d = learner.rank(c, f, ids, uniform=u)
    return d.chosen, d


def _played(stream: Stream, act, learner) -> dict[str, Any]:  # type: ignore[no-untyped-def]
    out = play(stream, act, learner, COLD_WINDOW)
    del out["losses"]
    return out


#: rounds after the half (and after that) in which cold start is measured (--cold-window)
COLD_WINDOW = 1000


class _VW:
    def __init__(self, algorithm: str, seed: int) -> None:
        import vowpalwabbit

        self.vw = vowpalwabbit.Workspace(f"{algorithm} --random_seed {seed} --quiet")

    def act(self, c, f, ids, u):  # type: ignore[no-untyped-def]
        lines = vw_text(c, f)
        pmf = np.asarray(self.vw.predict(lines), dtype=np.float64)
        pmf = pmf / pmf.sum()
        chosen = sample_action(pmf, u)
        return chosen, (lines, chosen, float(pmf[chosen]))

    def learn(self, record, reward: float) -> None:  # type: ignore[no-untyped-def]
        lines, chosen, p = record
        lines = list(lines)
        lines[chosen + 1] = f"0:{1.0 - reward!r}:{p!r} {lines[chosen + 1]}"
        self.vw.learn(lines)


def run_vw(algorithm: str) -> Runner:
    def run(stream: Stream, seed: int) -> dict[str, Any]:
        vw = _VW(algorithm, seed)
        try:
            return _played(stream, vw.act, vw)
        finally:
            vw.vw.finish()

    return run


def main(argv: list[str] | None = None) -> None:
    global COLD_WINDOW
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--datasets", nargs="*", default=list(DATASETS))
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=10_000)
    parser.add_argument("--candidates", type=int, default=10)
    parser.add_argument("--cold-window", type=int, default=1000)
    parser.add_argument("--vw", nargs="*", default=list(VW_ALGORITHMS))
    parser.add_argument("--out", type=Path, default=Path("runs/ranking_vs_vw"))
    args = parser.parse_args(argv)
    COLD_WINDOW = args.cold_window
    runners: dict[str, Runner] = {"banditree": run_banditree}
    runners.update({name: run_vw(VW_ALGORITHMS[name]) for name in args.vw})
    results: list[dict[str, Any]] = []
    jobs = [(d, s) for d in args.datasets for s in range(args.seeds)]
    for name, seed in tqdm(jobs, desc="streams"):
        stream = build_stream(name, seed, args.rounds, args.candidates)
        for learner, run in runners.items():
            results.append({"dataset": name, "seed": seed, "learner": learner, **run(stream, seed)})
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1))
    report = render(results, list(runners))
    (args.out / "report.md").write_text(report)
    print(report)


def _mean(rows: list[dict[str, Any]], key: str) -> float:
    vals = [r[key] for r in rows if not math.isnan(r[key])]
    return float(np.mean(vals)) if vals else math.nan


def render(results: list[dict[str, Any]], learners: list[str]) -> str:
    datasets = list(dict.fromkeys(r["dataset"] for r in results))
    lines = [
        "| stream | "
        + " | ".join(learners)
        + " | default / best VW | cold / seen reward (default) | cold / seen (best VW) |",
        "|---" * (len(learners) + 4) + "|",
    ]
    ratios = []
    for d in datasets:
        by = {
            lr: [r for r in results if r["dataset"] == d and r["learner"] == lr] for lr in learners
        }
        loss = {lr: _mean(rows, "loss") for lr, rows in by.items()}
        vws = [lr for lr in learners if lr.startswith("vw")]
        best = min(vws, key=lambda lr: loss[lr]) if vws else None
        ratio = loss["banditree"] / loss[best] if best else math.nan
        ratios.append(ratio)
        bt = by["banditree"]
        cold = (
            f"{_mean(bt, 'cold_reward'):.3f} / {_mean(bt, 'seen_reward'):.3f}; after "
            f"{COLD_WINDOW}: {_mean(bt, 'cold_reward_after'):.3f} / {_mean(bt, 'seen_reward_after'):.3f}"
        )
        vcold = (
            f"{_mean(by[best], 'cold_reward'):.3f} / {_mean(by[best], 'seen_reward'):.3f} ({best})"
            if best
            else "-"
        )
        cells = " | ".join(f"{loss[lr]:.4f}" for lr in learners)
        lines.append(f"| {d} | {cells} | {ratio:.3f} | {cold} | {vcold} |")
    finite = [r for r in ratios if math.isfinite(r) and r > 0]
    geo = math.exp(float(np.mean(np.log(finite)))) if finite else math.nan
    speed = {
        lr: _mean([r for r in results if r["learner"] == lr], "rounds_per_second")
        for lr in learners
    }
    lines.append("")
    lines.append(f"geometric mean default / best VW: {geo:.3f}")
    lines.append(
        "rounds per second (rank + learn): " + ", ".join(f"{k} {v:,.0f}" for k, v in speed.items())
    )
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
