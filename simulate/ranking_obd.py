"""The Open Bandit Dataset as a ranking log, and off-policy estimates of a ranking
configuration on it (``banditree simulate obd --task ranking``, ``benchmarks.quality.ranking_obd``).

The bundled OBD sample (``obd_random_all``: 10,000 impressions of the uniform-random
campaign, 80 items, clicks as rewards) becomes a ranking log: each impression's
context is the user's four hashed features and the position, its candidates are the
80 items with their item features (``item_context.csv``) and the user's affinity to
each item; the logged action is the shown item, played with probability 1/80.
A ranking configuration learns from the first ``train_fraction`` in time order; IPS,
SNIPS and DR (the candidate's predicted rewards as the reward model) estimate its policy
and its greedy choice on the rest, with bootstrap 95% intervals, beside the logged
policy's value.  VW (``--cb_explore_adf``, default epsilon-greedy and ``--squarecb``)
trains on the same rows written as DSJson and is estimated with the same reward model.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from banditree.datasets import data_path
from banditree.logs import LogWriter
from banditree.ope import (
    DoublyRobust,
    InverseProbabilityWeighting,
    SelfNormalizedInverseProbabilityWeighting,
    check_logged_rounds,
)
from banditree.ranking.evaluate import evaluate_ranking

VW_CONFIGS = {"vw_epsilon": "", "vw_squarecb": "--squarecb"}


def obd_rows() -> list[dict[str, Any]]:
    """The OBD sample as wire-form ranking rows, in time order."""
    import pandas as pd

    frame = pd.read_csv(data_path("obd_random_all/all.csv.gz")).sort_values(
        "timestamp", kind="stable"
    )
    items = pd.read_csv(data_path("obd_random_all/item_context.csv")).sort_values("item_id")
    item_features = [
        {"f0": float(str(r.item_feature_0)), "f1": r.item_feature_1, "f2": r.item_feature_2,
         "f3": r.item_feature_3}
        for r in items.itertuples()
    ]  # fmt: skip
    ids = [str(i) for i in items["item_id"]]
    k = len(ids)
    affinity = frame.filter(like="user-item_affinity_").to_numpy(np.float64)
    users = frame.filter(like="user_feature_").astype(str).to_numpy()
    rows = []
    for t, (item, position, click, p) in enumerate(
        zip(
            frame["item_id"],
            frame["position"],
            frame["click"],
            frame["propensity_score"],
            strict=True,
        )
    ):
        context = {"user": {f"u{j}": users[t, j] for j in range(users.shape[1])},
                   "position": str(position)}  # fmt: skip
        features = [{**item_features[j], "affinity": float(affinity[t, j])} for j in range(k)]
        rows.append({
            "offset": t + 1, "event_id": f"obd{t}", "time_seconds": 0.0, "model_version": 0,
            "context": [], "action": int(item), "propensity": float(p), "greedy_action": 0,
            "loss": 1.0 - float(click), "source": "feedback",
            "ranking": {"context": context, "ids": ids, "features": features,
                        "probabilities": [1.0 / k] * k},
        })  # fmt: skip
    return rows


def vw_estimates(
    rows: list[dict[str, Any]], cut: int, flags: str, q: np.ndarray, n_bootstrap: int, work: Path
) -> dict[str, Any]:
    """Train VW on ``rows[:cut]`` (DSJson), read its pmf on the rest; IPS / SNIPS / DR."""
    import vowpalwabbit

    train, test, model, preds = (work / n for n in ("train.json", "test.json", "m.vw", "p.txt"))
    for path, part in ((train, rows[:cut]), (test, rows[cut:])):
        with LogWriter(path, "dsjson") as writer:
            writer.write(part)
    quiet = "--quiet --cb_explore_adf --dsjson"
    vw = vowpalwabbit.Workspace(f"{quiet} {flags} -d {train} -f {model}")
    vw.run_parser()
    vw.finish()
    vw = vowpalwabbit.Workspace(f"{quiet} -t -i {model} -d {test} -p {preds}")
    vw.run_parser()
    vw.finish()
    n, k = len(rows) - cut, len(rows[0]["ranking"]["ids"])
    dist = np.zeros((n, k))
    lines = [line for line in preds.read_text().splitlines() if line.strip()]
    for i, line in enumerate(lines[:n]):
        for pair in line.split(","):
            action, probability = pair.split(":")
            dist[i, int(action)] = float(probability)
    test_rows = rows[cut:]
    log = check_logged_rounds(
        reward=np.array([1.0 - r["loss"] for r in test_rows]),
        action=np.array([r["action"] for r in test_rows]),
        propensity=np.array([r["propensity"] for r in test_rows]),
        action_dist=dist, estimated_rewards=q,
    )  # fmt: skip
    out: dict[str, Any] = {}
    for estimator in (InverseProbabilityWeighting(), SelfNormalizedInverseProbabilityWeighting(),
                      DoublyRobust()):  # fmt: skip
        out[estimator.name] = estimator.summary(log, n_bootstrap=n_bootstrap)
    return out


def evaluate_obd(
    config: dict[str, Any],
    *,
    train_fraction: float = 0.7,
    n_bootstrap: int = 1000,
    vw: bool = True,
    limit: int | None = None,
) -> dict[str, Any]:
    """Estimates of the ranking ``config`` (and VW's, when ``vw`` and ``vowpalwabbit`` is
    installed) on the OBD log (its first ``limit`` impressions when given):
    ``{"banditree": evaluate_ranking's answer, "vw_*": {...}, "notices": [...]}``."""
    rows = obd_rows()
    if limit is not None:
        rows = rows[:limit]
    result = evaluate_ranking(
        rows, config, train_fraction=train_fraction, n_bootstrap=n_bootstrap,
        keep_reward_model=True,
    )  # fmt: skip
    q = result.pop("reward_model")
    figures: dict[str, Any] = {"banditree": result, "notices": []}
    if vw:
        try:
            import vowpalwabbit  # noqa: F401
        except ImportError:
            figures["notices"].append("vowpalwabbit is not installed: no VW estimates")
            return figures
        with tempfile.TemporaryDirectory() as tmp:
            for name, flags in VW_CONFIGS.items():
                figures[name] = vw_estimates(
                    rows, result["n_train"], flags, q, n_bootstrap, Path(tmp)
                )
    return figures
