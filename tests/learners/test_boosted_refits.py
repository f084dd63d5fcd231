"""Boosted refits on the worker thread: applied at a round fixed by the schedule, so that
replays and restored checkpoints decide as the live learner did, however slow the worker."""

from __future__ import annotations

import threading
from typing import Any

import numpy as np
import pytest

from banditree.learners import Feedback, build_learner
from banditree.learners.boosted import BoostedBandit, refits
from banditree.learners.boosted import learner as learner_module
from banditree.persistence import dumps, loads

D, K = 4, 3


@pytest.fixture(autouse=True)
def small_fits_in_the_background(monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows of 60 rows and more fit on the worker, used at most 15 rounds later."""
    monkeypatch.setattr(learner_module, "BACKGROUND_ROWS", 60)
    monkeypatch.setattr(refits, "FIT_LAG", 15)


def boosted(**options: Any) -> BoostedBandit:
    learner = build_learner(
        {
            "kind": "boosted", "n_features": D, "n_actions": K, "n_trees": 5, "seed": 2,
            "options": {"first_fit": 30, "refit_growth": 1.3, "max_refit_interval": 40,
                        **options},
        }
    )  # fmt: skip
    assert isinstance(learner, BoostedBandit)
    return learner


def stream(n: int, seed: int = 0) -> tuple[np.ndarray, list[int]]:
    rng = np.random.default_rng(seed)
    x = rng.normal(size=(n, D))
    return x, ((x[:, 0] * x[:, 1] > 0).astype(int) + (x[:, 2] > 1.0)).tolist()


def play(learner: BoostedBandit, x: np.ndarray, labels: list[int], first: int = 0) -> list[Any]:
    """Decide and learn each round; the decisions and the fits done after each."""
    out = []
    for i, (row, label) in enumerate(zip(x, labels, strict=True)):
        d = learner.act(row, f"e{first + i}")
        learner.learn(d, Feedback(loss=float(d.action != label)))
        out.append((d.to_dict(), learner.fits))
    return out


def test_a_fit_is_used_at_its_round_however_slow_the_worker() -> None:
    x, labels = stream(260)
    fast = play(boosted(), x, labels)
    gate = threading.Event()
    blocker = refits.fit_worker().submit(gate.wait, 30.0)  # the worker busy meanwhile
    slow_learner = boosted()
    slow = play(slow_learner, x[:70], labels[:70])
    pending = slow_learner._pending_fit
    assert pending is not None and pending.apply_at == 82  # started after round 67
    assert not blocker.done()  # the fit waits behind the blocker: not run yet
    threading.Timer(0.3, gate.set).start()  # the learner waits for it at round 82
    slow += play(slow_learner, x[70:], labels[70:], first=70)
    assert slow == fast
    fits = [f for _, f in fast]
    grew = [i + 1 for i in range(1, len(fits)) if fits[i] != fits[i - 1]]
    # windows under 60 rows used at once (30, 39, 51); then fits started after 67, 88,
    # 115, 150 used min(FIT_LAG = 15, rounds to the next fit) rounds later
    assert grew[:7] == [30, 39, 51, 82, 103, 130, 165]


def test_a_checkpoint_holds_the_pending_fit() -> None:
    x, labels = stream(260)
    live = boosted()
    play(live, x[:100], labels[:100])
    assert live._pending_fit is not None  # started after round 88, used after 103
    restored = loads(dumps(live))
    assert isinstance(restored, BoostedBandit) and restored._pending_fit is not None
    assert restored._pending_fit.apply_at == live._pending_fit.apply_at
    assert play(live, x[100:], labels[100:], 100) == play(restored, x[100:], labels[100:], 100)


def test_a_checkpoint_must_not_split_a_pending_fit() -> None:
    x, labels = stream(100)
    live = boosted()
    play(live, x, labels)
    tensors, meta = live.state()
    meta = {**meta, "apply_at": None}
    with pytest.raises(ValueError, match="pending fit"):
        boosted().load_state(tensors, meta)


def test_lightgbm_is_imported_on_the_worker_once_a_fit_is_near(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    asked: list[int] = []
    monkeypatch.setattr(learner_module, "preload_lightgbm", lambda: asked.append(1))
    learner = boosted(first_fit=40)
    learner.prepare_to_learn()
    assert asked == []  # a fresh model: no fit near, no import
    x, labels = stream(25)
    play(learner, x[:19], labels[:19])
    assert asked == []
    play(learner, x[19:], labels[19:], first=19)  # the 20th round: half of first_fit
    assert asked == [1] and learner.fits == 0  # asked once, before the first fit
    restored = loads(dumps(learner))
    restored.prepare_to_learn()  # a taken model that is near its fit: asked at once
    assert asked == [1, 1]
    assert refits.preload_lightgbm().result(timeout=60).__name__ == "lightgbm"
