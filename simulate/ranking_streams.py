"""Ranking streams from classification sets: candidate actions described by features,
a changing candidate subset each round, classes held back from the first half.

* every class is a candidate action described by features: its centroid over a
  *catalogue* slice of the data (the first 10% of rows, never streamed), projected on the
  catalogue's top :data:`ACTION_DIM` principal directions; contexts are z-scored with
  the catalogue's statistics;
* each round offers ``n_candidates`` of the classes (the row's own class and others
  drawn at random, in random order); the reward is 1 for the row's class, else 0;
* a quarter of the classes (at least one) are held back: their rows are skipped and they
  are never offered in the first half of the stream, so the second half measures cold
  start on actions never seen.

The same stream and the same sampling uniforms serve every learner of a seed
(``benchmarks.quality.ranking_vs_vw`` and ``banditree simulate --task ranking``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from banditree.datasets import load

#: candidate feature width (principal directions of the class centroids)
ACTION_DIM = 8
#: rounds after the half (and after that) in which cold start is measured
COLD_WINDOW = 1000


@dataclass
class Stream:
    """One ranking stream: per round a context, candidate classes, the rewarded class."""

    name: str
    contexts: np.ndarray  # (T, d)
    candidates: list[np.ndarray]  # per round, class indices offered
    labels: np.ndarray  # (T,)
    class_features: np.ndarray  # (K, ACTION_DIM)
    held_back: set[int]
    half: int
    uniforms: np.ndarray  # (T,)


def build_stream(name: str, seed: int, rounds: int, n_candidates: int) -> Stream:
    """The ranking stream of bundled classification set ``name`` (see the module)."""
    if rounds < 2:
        raise ValueError(f"rounds must be >= 2, got {rounds}")
    if n_candidates < 2:
        raise ValueError(f"candidates must be >= 2, got {n_candidates}")
    ds = load(name)
    if ds.task != "classification":
        raise ValueError(f"{name} is a {ds.task} set: ranking streams need class labels")
    x = np.concatenate((ds.X_train, ds.X_test)).astype(np.float64)
    y = np.concatenate((ds.y_train, ds.y_test)).astype(np.int64)
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(y))
    x, y = x[order], y[order]
    n_cat = max(len(y) // 10, 200)
    cat_x, cat_y = x[:n_cat], y[:n_cat]
    mean, std = cat_x.mean(axis=0), cat_x.std(axis=0)
    std[std < 1e-12] = 1.0
    z = (x - mean) / std
    classes = np.unique(y)
    if len(classes) < 3:
        raise ValueError(f"{name} has {len(classes)} classes: ranking streams need >= 3")
    k = int(classes.max()) + 1
    centroids = np.zeros((k, x.shape[1]))
    for c in range(k):
        rows = z[:n_cat][cat_y == c]
        centroids[c] = rows.mean(axis=0) if len(rows) else 0.0
    _, _, vt = np.linalg.svd(centroids - centroids.mean(axis=0), full_matrices=False)
    features = centroids @ vt[: min(ACTION_DIM, vt.shape[0])].T
    held = set(rng.choice(classes, size=max(1, len(classes) // 4), replace=False).tolist())
    stream_x, stream_y = z[n_cat:], y[n_cat:]
    half = min(rounds, len(stream_y)) // 2
    keep = [i for i in range(len(stream_y)) if i >= half or int(stream_y[i]) not in held]
    keep = keep[:rounds]
    half = sum(1 for i in keep if i < half)
    contexts, labels = stream_x[keep], stream_y[keep]
    seen_pool = np.array([c for c in classes if c not in held])
    cands = []
    for t, label in enumerate(labels):
        pool = seen_pool if t < half else classes
        others = pool[pool != label]
        m = min(n_candidates, len(others) + 1)
        picked = np.concatenate(([label], rng.choice(others, size=m - 1, replace=False)))
        cands.append(rng.permutation(picked))
    return Stream(name, contexts, cands, labels, features, held, half, rng.random(len(labels)))


class Player(Protocol):
    """What :func:`play` drives: ``learn(record, reward)`` after each round's act."""

    def learn(self, record: Any, reward: float) -> Any: ...


#: ``act(context, candidate features, ids, uniform) -> (chosen index, record to learn)``
Act = Callable[[np.ndarray, np.ndarray, list[str], float], tuple[int, Any]]


def play(
    stream: Stream, act: Act, learner: Player, cold_window: int = COLD_WINDOW
) -> dict[str, Any]:
    """Progressive play of ``stream``: act, reward, learn; :func:`summary` plus the
    per-round ``losses`` array."""
    losses = np.zeros(len(stream.labels))
    start = time.perf_counter()
    for t, (c, cands, label) in enumerate(
        zip(stream.contexts, stream.candidates, stream.labels, strict=True)
    ):
        feats = stream.class_features[cands]
        ids = [str(int(v)) for v in cands]
        chosen, record = act(c, feats, ids, float(stream.uniforms[t]))
        reward = 1.0 if int(cands[chosen]) == int(label) else 0.0
        losses[t] = 1.0 - reward
        learner.learn(record, reward)
    seconds = time.perf_counter() - start
    return {**summary(stream, losses, seconds, cold_window), "losses": losses}


def cold_mask(stream: Stream) -> np.ndarray:
    """Per round: is the rewarded class one held back from the first half."""
    return np.array([int(v) in stream.held_back for v in stream.labels], dtype=bool)


def summary(
    stream: Stream, losses: np.ndarray, seconds: float, cold_window: int = COLD_WINDOW
) -> dict[str, Any]:
    """Progressive loss, cold-start and seen rewards in the ``cold_window`` rounds after
    the half (``cold_reward``, ``seen_reward``) and in the next ``cold_window`` rounds
    (``*_after``), rounds per second."""
    half = stream.half
    cold_all = cold_mask(stream)
    out: dict[str, Any] = {}
    for key, start in (("", half), ("_after", half + cold_window)):
        window = slice(start, min(start + cold_window, len(losses)))
        cold = cold_all[window]
        rewards = 1.0 - losses[window]
        out[f"cold_reward{key}"] = float(rewards[cold].mean()) if cold.any() else math.nan
        out[f"seen_reward{key}"] = float(rewards[~cold].mean()) if (~cold).any() else math.nan
    return {
        **out,
        "loss": float(losses.mean()),
        "loss_second_half": float(losses[half:].mean()) if half < len(losses) else math.nan,
        "rounds": len(losses),
        "rounds_per_second": len(losses) / max(seconds, 1e-9),
    }
