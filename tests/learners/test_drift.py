"""Forgetting: the change detector, its restart of the ridge and explorer, the step floor."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from banditree.datasets import load
from banditree.learners import Feedback, LearnerConfig, build_learner
from banditree.learners.drift import RECENT_SIGNALS, LossRiseDetector
from banditree.learners.factory import restore_learner
from banditree.learners.gradient_bandit import GradientBandit
from simulate.drift import drift_labels


def test_detector_signals_a_rise_quickly_and_a_stationary_stream_never() -> None:
    rng = np.random.default_rng(0)
    quiet = LossRiseDetector(30.0)
    # 100,000 rounds at the noisiest loss (a fair coin) and a slowly falling one
    assert not any(quiet.update(float(v)) for v in rng.random(100_000) < 0.5)
    assert quiet.signals == 0
    learning = LossRiseDetector(30.0)  # a model learning: its loss falls
    falling = np.linspace(0.8, 0.1, 50_000)
    assert not any(learning.update(float(v)) for v in rng.random(50_000) < falling)
    rising = LossRiseDetector(30.0)
    for v in rng.random(5_000) < 0.1:
        assert not rising.update(float(v))
    after = [rising.update(float(v)) for v in rng.random(500) < 0.9]
    assert any(after) and after.index(True) < 80
    assert rising.signals == 1


def test_the_jump_test_signals_a_jump_sooner_and_a_stationary_stream_never() -> None:
    rng = np.random.default_rng(0)
    quiet = LossRiseDetector(30.0, jump_threshold=10.0)
    assert not any(quiet.update(float(v)) for v in rng.random(200_000) < 0.5)
    delays = {}
    for jump in (None, 10.0):
        detector = LossRiseDetector(30.0, jump_threshold=jump)
        for v in rng.random(5_000) < 0.06:  # a set the model had right, then all wrong
            assert not detector.update(float(v))
        after = [detector.update(1.0) for _ in range(100)]
        delays[jump] = after.index(True)
    assert delays[10.0] <= 15 < 30 <= delays[None], delays


def test_detector_state_round_trip() -> None:
    a, b = LossRiseDetector(30.0, jump_threshold=10.0), LossRiseDetector(30.0, jump_threshold=10.0)
    for v in [0.0, 1.0, 0.0, 0.0] * 50:
        a.update(v)
    b.load_state(a.state())
    rng = np.random.default_rng(1)
    for v in rng.random(400) < 0.9:
        assert a.update(float(v)) == b.update(float(v))
    old = {k: v for k, v in a.state().items() if not k.startswith("jump_")}
    b.load_state(old)  # a checkpoint from before the jump test: that statistic afresh
    assert (b.jump_cum, b.jump_low, b.n) == (0.0, 0.0, a.n)


def test_a_signal_shrinks_the_tree_leaves_and_keeps_its_splits() -> None:
    x, y = _shifted_stream(600, 600)
    for shrink, config in ((0.5, {}), (1.0, {"drift_leaf_shrink": 1.0})):
        learner = build_learner(
            {"kind": "dgt", "n_features": 2, "n_actions": 3, "seed": 1, **config}
        )
        assert isinstance(learner, GradientBandit) and learner.leaf_shrink == shrink
        _play(learner, x, y)
        before = {k: v.copy() for k, v in learner._params.items()}
        assert np.abs(before["theta"]).max() > 0.0
        learner._on_drift()
        np.testing.assert_array_equal(learner._params["theta"], shrink * before["theta"])
        np.testing.assert_array_equal(learner._params["W0"], before["W0"])


def _shifted_stream(n: int, at: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Three well-separated clusters, label = cluster; from ``at`` the right action is
    the next one (the label-to-action map shifts by one)."""
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 3, size=n)
    centres = np.array([[3.0, 0.0], [-3.0, 3.0], [0.0, -3.0]])
    x = centres[labels] + rng.normal(scale=0.5, size=(n, 2))
    return x, np.where(np.arange(n) >= at, (labels + 1) % 3, labels)


def _play(learner: Any, x: np.ndarray, y: np.ndarray) -> np.ndarray:
    losses = np.empty(len(y))
    start = learner.counters["feedback"]
    for t, (row, label) in enumerate(zip(x, y.tolist(), strict=True)):
        d = learner.act(row, event_id=f"e{start + t}")
        losses[t] = float(d.action != label)
        learner.learn(d, Feedback(loss=losses[t]))
    return losses


def _recovery(losses: np.ndarray, at: int, window: int = 500) -> int | None:
    """Rounds after ``at`` until a ``window``-round mean is within 0.05 of the mean of
    the 1,000 rounds before ``at``."""
    target = losses[at - 1000 : at].mean() + 0.05
    c = np.concatenate([[0.0], np.cumsum(losses)])
    means = (c[at + window :] - c[at : len(c) - window]) / window
    hits = np.flatnonzero(means <= target)
    return int(hits[0]) + window if hits.size else None


def test_a_tree_follows_a_map_shift_the_detector_off_does_not() -> None:
    """A dgt tree (the default's online tree, whose detector also restarts the default's
    ensemble: ``tests/learners/test_boosted.py``) on SatImage, the label-to-action map shifting by one at round 3,000 (the drift
    benchmark's abrupt change): the detector signals once, the restarted ridge
    recovers in under 1,000 rounds; without it, in over 2,000 at more than twice the
    loss."""
    at, n = 3000, 6000
    ds = load("satimage")
    order = np.random.default_rng(0).permutation(len(ds.y_train))
    order = np.concatenate([order, order])[:n]
    x, y = ds.X_train[order], drift_labels(ds.y_train[order], ds.n_classes, "abrupt", at, 0)
    base = {"kind": "dgt", "n_features": ds.n_features, "n_actions": ds.n_classes}
    default = build_learner(base)
    off = build_learner({**base, "drift_threshold": 0})
    assert isinstance(default, GradientBandit) and isinstance(off, GradientBandit)
    losses, losses_off = _play(default, x, y), _play(off, x, y)
    np.testing.assert_array_equal(losses[:at], losses_off[:at])  # no signal before
    assert default.counters["drift_signals"] == 1 and off.counters["drift_signals"] == 0
    recovery, recovery_off = _recovery(losses, at), _recovery(losses_off, at)
    assert recovery is not None and recovery <= 1000, recovery
    assert recovery_off is None or recovery_off > 2000, recovery_off
    assert losses[at:].mean() < 0.5 * losses_off[at:].mean()


def test_a_checkpoint_carries_the_detector_and_the_explorers_restart() -> None:
    at = 2000
    x, y = _shifted_stream(3000, at)
    whole = build_learner({"kind": "dgt", "n_features": 2, "n_actions": 3, "seed": 4})
    first = build_learner({"kind": "dgt", "n_features": 2, "n_actions": 3, "seed": 4})
    assert isinstance(whole, GradientBandit)
    whole_losses = _play(whole, x, y)
    first_losses = _play(first, x[:2300], y[:2300])
    resumed = restore_learner(*first.state())
    rest = _play(resumed, x[2300:], y[2300:])
    np.testing.assert_array_equal(np.concatenate([first_losses, rest]), whole_losses)
    assert resumed.counters["drift_signals"] == whole.counters["drift_signals"] == 1
    assert whole._explore_rounds < whole.counters["feedback"]
    # the signal is recorded where it happened, and a checkpoint carries the record
    (event,) = whole.drift_events()
    assert resumed.drift_events() == [event]
    assert event["signal"] == 1 and event["test"] in ("rise", "jump")
    assert at < event["feedback"] < at + 100  # the shift is seen within ~40 rounds
    assert event["event_id"] == f"e{event['feedback'] - 1}" and event["version"] > 0
    assert event["rounds"] == event["feedback"]  # the first signal: rounds since the start


def test_the_detector_keeps_the_newest_signals_only() -> None:
    detector = LossRiseDetector(5.0, min_rounds=10)
    for t in range(RECENT_SIGNALS * 3 * 40):
        if detector.update(float((t // 40) % 2)):  # 40 rounds right, 40 wrong, ...
            detector.locate(feedback=t + 1)
    assert detector.signals > RECENT_SIGNALS
    assert len(detector.recent) == RECENT_SIGNALS
    kept = [r["signal"] for r in detector.recent]
    assert kept == list(range(detector.signals - RECENT_SIGNALS + 1, detector.signals + 1))
    copy = LossRiseDetector(5.0, min_rounds=10)
    copy.load_state(detector.state())
    assert list(copy.recent) == list(detector.recent)
    copy.load_state({k: v for k, v in detector.state().items() if k != "recent"})
    assert copy.signals == detector.signals and not copy.recent  # an older checkpoint


def test_stored_configs_keep_their_behaviour() -> None:
    """A record written before the detector and the floor rebuilds without them."""
    config = LearnerConfig.model_validate({"kind": "dgt", "n_features": 2, "n_actions": 3})
    assert config.resolved_drift_threshold == 30.0
    stored = {
        k: v
        for k, v in config.model_dump(mode="json").items()
        if k not in ("drift_threshold", "learning_rate_floor")
    }
    old = LearnerConfig.from_stored(stored)
    assert old.resolved_drift_threshold is None and old.resolved_learning_rate_floor == 0.0
    # one written with the detector, before its jump test and the leaves' shrink
    detector_only = LearnerConfig.from_stored(
        {k: v for k, v in config.model_dump(mode="json").items() if "jump" not in k
         and "shrink" not in k}
    )  # fmt: skip
    assert detector_only.resolved_drift_threshold == 30.0
    assert detector_only.resolved_drift_jump_threshold is None
    assert detector_only.resolved_drift_leaf_shrink == 1.0
    assert (config.resolved_drift_jump_threshold, config.resolved_drift_leaf_shrink) == (10.0, 0.5)
    learner = build_learner(old)
    assert isinstance(learner, GradientBandit) and learner._detector is None
    # a record written now keeps the defaults it was written with
    again = LearnerConfig.from_stored(config.model_dump(mode="json"))
    assert again.resolved_drift_threshold == 30.0
    regression = LearnerConfig.model_validate({"task": "regression", "n_features": 2})
    assert regression.resolved_drift_threshold is None  # losses without a scale


def _regression(**extra: Any) -> dict[str, Any]:
    return {"task": "regression", "n_features": 2, "height": 3, "estimator": "two_point",
            "learning_rate": 1e-2, "learning_rate_decay": 10, **extra}  # fmt: skip


@pytest.mark.parametrize(("floor", "expected"), [(0.1, 1e-3), (0.0, 1e-2 / 21)])
def test_the_decayed_step_stops_at_its_floor(floor: float, expected: float) -> None:
    learner = build_learner(_regression(learning_rate_floor=floor))
    assert isinstance(learner, GradientBandit)
    rng = np.random.default_rng(0)
    for _ in range(200):
        x = rng.normal(size=2)
        d = learner.act(x)
        assert d.probes is not None
        learner.learn(d, Feedback(losses=tuple((p - x[0]) ** 2 for p in d.probes)))
    # the last update came at t = 200: 1e-2 / (1 + 200 / 10) without the floor
    assert learner._optimizer.lr == pytest.approx(expected)
    assert LearnerConfig.model_validate(_regression()).resolved_learning_rate_floor == 0.1
