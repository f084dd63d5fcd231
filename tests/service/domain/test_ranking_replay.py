"""A ranking model's log replays exactly: stored payloads, log entries, apply_entry."""

from __future__ import annotations

import random

import numpy as np

import banditree.ranking  # noqa: F401  (registers the ranking task)
from banditree.core import Feedback
from banditree.core.codec import decision_payload, feedback_json
from banditree.learners import build_learner
from service.domain.runtime.replay import default_feedback, replay
from service.store import LogEntry

UID = "model-uid"


def test_replaying_the_log_rebuilds_the_served_model_exactly() -> None:
    config = {"task": "ranking", "seed": 3}
    live = build_learner(config)
    rng = random.Random(0)
    entries = []
    for t in range(120):
        actions = [(f"a{j}", {"color": rng.choice(["red", "blue", "green"]), "size": rng.random()})
                   for j in range(rng.randrange(2, 8))]  # fmt: skip
        context = {"user": {"tier": rng.choice(["free", "paid"])}, "hour": rng.randrange(24)}
        deferred = t % 7 == 6  # deferred, never activated: expires, is not learned
        d = live.rank(context, actions, f"e{t}", active=not deferred)  # type: ignore[attr-defined]
        payload = decision_payload(UID, d)
        if deferred:
            assert default_feedback(d, 1.0) is not None
            live.learn(d, Feedback(loss=1.0))  # what the learner does with an expired one
            entries.append(LogEntry(t + 1, d.event_id, payload, None, 0.0))
            continue
        feedback = Feedback(loss=float(rng.random() < 0.4))
        live.learn(d, feedback)
        entries.append(LogEntry(t + 1, d.event_id, payload, feedback_json(feedback), 0.0))
    rebuilt = replay(config, entries, uid=UID, default_loss=1.0)
    assert rebuilt.version == live.version == 120 - len(range(6, 120, 7))
    mine, theirs = live.state(), rebuilt.state()
    for meta in (mine[1], theirs[1], mine[1]["core"], theirs[1]["core"]):
        meta.pop("n_decisions")  # decisions made, not learned: the replay made none
    assert mine[1] == theirs[1]
    assert set(mine[0]) == set(theirs[0])
    for key, value in mine[0].items():
        assert np.array_equal(value, theirs[0][key]), key
