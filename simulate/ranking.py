"""``banditree simulate DATA --task ranking``: the ranking model on a ranking stream built
from a classification set (:mod:`simulate.ranking_streams`), beside baselines.

Each seed builds one stream (the same rounds, candidates and sampling uniforms for every
learner).  Learners:

* ``ranking``: the ranking model of the service (``{"task": "ranking"}`` and the
  command's learner options), fed the context and each candidate's features as JSON
  objects (``c0..``, ``a0..``), as a client would send them;
* baselines: ``random`` (uniform over the candidates), ``linear`` (the same model
  without its tree, ``options.tree`` false) and ``vw`` (VW ``--cb_explore_adf
  --squarecb -q ca``, when ``vowpalwabbit`` is installed).

Reported per learner (mean over seeds, 95% t-interval): the progressive loss
(1 - reward, exploration included), the reward on held-back classes (never seen before
the half: cold start) in the ``cold_window`` rounds after the half and in the next
``cold_window`` rounds, beside the reward on seen classes in the same rounds, and
rounds per second.  Writes ``report.json``, ``curves.csv`` and ``ranking.png``.
"""

from __future__ import annotations

import csv
import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from banditree.core import Decision, Feedback
from banditree.explore import sample_action
from banditree.learners import LearnerConfig, build_learner
from banditree.ranking import RankingModel
from simulate.intervals import summarise
from simulate.ranking_plot import write_ranking_plot
from simulate.ranking_streams import COLD_WINDOW, Stream, build_stream, cold_mask, play

BASELINES = ("random", "linear", "vw")
VW_FLAGS = "--cb_explore_adf --squarecb -q ca"
#: figures of one seed's play, aggregated over seeds
FIGURES = (
    "loss",
    "loss_second_half",
    "cold_reward",
    "seen_reward",
    "cold_reward_after",
    "seen_reward_after",
    "rounds_per_second",
)


@dataclass
class RankingSimulation:
    """Settings of a ranking simulation (the command's options)."""

    data: str
    out: Path
    rounds: int = 4000
    candidates: int = 10
    seeds: int = 3
    baselines: list[str] = field(default_factory=lambda: ["random", "vw"])
    config: dict[str, Any] = field(default_factory=dict)
    cold_window: int = COLD_WINDOW
    progress: bool = True


class _Model:
    """The service's ranking model, played with the stream's uniforms."""

    def __init__(self, config: dict[str, Any], seed: int) -> None:
        model = build_learner(LearnerConfig.model_validate({**config, "seed": seed}))
        assert isinstance(model, RankingModel)
        self.model = model

    def act(self, c: np.ndarray, f: np.ndarray, ids: list[str], u: float) -> tuple[int, Decision]:
        context = {f"c{j}": float(v) for j, v in enumerate(c)}
        actions = [
            (i, {f"a{j}": float(v) for j, v in enumerate(row)})
            for i, row in zip(ids, f, strict=True)
        ]
        d = self.model.rank(context, actions, uniform=u)
        assert d.action is not None
        return d.action, d

    def learn(self, record: Decision, reward: float) -> None:
        self.model.learn(record, Feedback(loss=1.0 - reward))


class _Random:
    def act(self, c: np.ndarray, f: np.ndarray, ids: list[str], u: float) -> tuple[int, None]:
        return min(int(u * len(ids)), len(ids) - 1), None

    def learn(self, record: None, reward: float) -> None:
        return None


class _VW:
    def __init__(self, seed: int) -> None:
        import vowpalwabbit

        self.vw = vowpalwabbit.Workspace(f"{VW_FLAGS} --random_seed {seed} --quiet")

    def act(self, c: np.ndarray, f: np.ndarray, ids: list[str], u: float) -> tuple[int, Any]:
        lines = vw_text(c, f)
        pmf = np.asarray(self.vw.predict(lines), dtype=np.float64)
        pmf = pmf / pmf.sum()
        chosen = sample_action(pmf, u)
        return chosen, (lines, chosen, float(pmf[chosen]))

    def learn(self, record: Any, reward: float) -> None:
        lines, chosen, p = record
        lines = list(lines)
        lines[chosen + 1] = f"0:{1.0 - reward!r}:{p!r} {lines[chosen + 1]}"
        self.vw.learn(lines)


def vw_text(context: np.ndarray, feats: np.ndarray) -> list[str]:
    """One round as VW ADF text: the context in namespace ``c``, candidates in ``a``."""
    shared = "shared |c " + " ".join(f"c{j}:{v:.6g}" for j, v in enumerate(context))
    return [shared, *("|a " + " ".join(f"a{j}:{v:.6g}" for j, v in enumerate(f)) for f in feats)]


def _players(options: RankingSimulation, seed: int, notices: list[str]) -> dict[str, Any]:
    config = {**options.config, "task": "ranking"}
    players: dict[str, Any] = {"ranking": _Model(config, seed)}
    for name in options.baselines:
        if name == "random":
            players[name] = _Random()
        elif name == "linear":
            ranking_options = {**(config.get("options") or {}), "tree": False}
            players[name] = _Model({**config, "options": ranking_options}, seed)
        elif name == "vw":
            try:
                players[name] = _VW(seed)
            except ImportError:
                if seed == 0:
                    notices.append("vowpalwabbit is not installed: no vw baseline")
        else:
            raise ValueError(f"baselines: unknown {name!r} (one of {', '.join(BASELINES)})")
    return players


def _windowed(stream: Stream, losses: np.ndarray, width: int) -> list[dict[str, Any]]:
    """Reward on cold and seen classes in consecutive ``width``-round windows after the half."""
    cold = cold_mask(stream)
    out = []
    for start in range(stream.half, len(losses), width):
        window = slice(start, min(start + width, len(losses)))
        r, c = 1.0 - losses[window], cold[window]
        out.append({
            "round": start - stream.half,
            "cold": float(r[c].mean()) if c.any() else math.nan,
            "seen": float(r[~c].mean()) if (~c).any() else math.nan,
        })  # fmt: skip
    return out


def simulate_ranking(options: RankingSimulation) -> dict[str, Any]:
    """Play every seed's stream through every learner; write and return the report."""
    if options.seeds < 1:
        raise ValueError(f"seeds must be >= 1, got {options.seeds}")
    if options.cold_window < 1:
        raise ValueError(f"cold_window must be >= 1, got {options.cold_window}")
    try:
        LearnerConfig.model_validate({**options.config, "task": "ranking"})
    except ValidationError as err:  # the broken rules, each naming its field
        raise ValueError("; ".join(e["msg"] for e in err.errors())) from None
    notices: list[str] = []
    per_seed: dict[str, list[dict[str, Any]]] = {}
    curves: dict[str, list[np.ndarray]] = {}
    windows: dict[str, list[list[dict[str, Any]]]] = {}
    streams = []
    seeds: Iterable[int] = range(options.seeds)
    if options.progress:
        from tqdm import tqdm

        seeds = tqdm(seeds, desc="seeds")
    for seed in seeds:
        stream = build_stream(options.data, seed, options.rounds, options.candidates)
        streams.append(stream)
        for name, player in _players(options, seed, notices).items():
            result = play(stream, player.act, player, options.cold_window)
            losses = result.pop("losses")
            per_seed.setdefault(name, []).append(result)
            curves.setdefault(name, []).append(np.cumsum(losses) / np.arange(1, len(losses) + 1))
            windows.setdefault(name, []).append(
                _windowed(stream, losses, max(options.cold_window // 4, 1))
            )
    learners: dict[str, Any] = {}
    for name, results in per_seed.items():
        entry: dict[str, Any] = {}
        for figure in FIGURES:
            values = [r[figure] for r in results if not math.isnan(r[figure])]
            mean, ci = summarise(values) if values else (math.nan, [None, None])
            entry[figure], entry[f"{figure}_ci95"] = mean, ci
        seen = entry["seen_reward_after"]
        entry["cold_over_seen_after"] = entry["cold_reward_after"] / seen if seen else math.nan
        entry["per_seed"] = results
        learners[name] = entry
    report = {
        "task": "ranking",
        "dataset": options.data,
        "rounds": [len(s.labels) for s in streams],
        "candidates": options.candidates,
        "seeds": list(range(options.seeds)),
        "half": [s.half for s in streams],
        "held_back": [sorted(int(c) for c in s.held_back) for s in streams],
        "n_classes": len(np.unique(streams[0].labels)),
        "cold_window": options.cold_window,
        "config": {**options.config, "task": "ranking"},
        "learners": learners,
        "notices": notices,
    }
    _write(options.out, report, curves, windows)
    return report


def _write(
    out: Path,
    report: dict[str, Any],
    curves: dict[str, list[np.ndarray]],
    windows: dict[str, list[list[dict[str, Any]]]],
) -> None:
    import json

    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(finite_json(report), indent=2, allow_nan=False))
    with (out / "curves.csv").open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["learner", "seed", "curve", "round", "value"])
        for name, per in curves.items():
            for seed, curve in enumerate(per):
                step = max(len(curve) // 200, 1)
                for t in sorted({*range(step - 1, len(curve), step), len(curve) - 1}):
                    writer.writerow([name, seed, "progressive_loss", t + 1, f"{curve[t]:.6g}"])
        for name, per_windows in windows.items():
            for seed, rows in enumerate(per_windows):
                for row in rows:
                    for kind in ("cold", "seen"):
                        writer.writerow(
                            [name, seed, f"{kind}_reward", row["round"], f"{row[kind]:.6g}"]
                        )
    write_ranking_plot(report, curves, windows, out / "ranking.png")


def finite_json(value: Any) -> Any:
    """``value`` with every NaN float written as None (``null``)."""
    if isinstance(value, float):
        return None if math.isnan(value) else value
    if isinstance(value, dict):
        return {k: finite_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [finite_json(v) for v in value]
    return value
