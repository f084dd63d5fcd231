"""Apprentice mode and the log route through a live server, driven by the Python client."""

from __future__ import annotations

import signal
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from banditree.client import BanditreeError, Client
from tests.learners.test_apprentice import _breast_cancer_with_a_linear_rule
from tests.service.live_server import LiveServer

KEYS = {"BANDITREE_API_KEYS": "app", "BANDITREE_ADMIN_KEYS": "admin"}


@pytest.mark.slow
def test_apprentice_learns_the_default_then_decides_after_the_switch(
    live_servers: Callable[[dict[str, str]], LiveServer], tmp_path: Path
) -> None:
    env = {**KEYS, "BANDITREE_DATA_DIR": str(tmp_path / "data")}
    server = live_servers(env)
    X, y, rule = _breast_cancer_with_a_linear_rule()
    config = {"kind": "dgt", "n_features": X.shape[1], "n_actions": 2, "mode": "apprentice"}
    admin, app = Client(server.url, api_key="admin"), Client(server.url, api_key="app")
    with admin, app:
        admin.create_model("cancer", config)
        with pytest.raises(BanditreeError) as refused:
            app.predict("cancer", X[0].tolist())
        assert (refused.value.status, refused.value.field) == (422, "default_action")
        with pytest.raises(BanditreeError) as out_of_range:
            app.predict("cancer", X[0].tolist(), default_action=2)
        assert out_of_range.value.status == 422 and "[0, 1]" in out_of_range.value.detail
        order = np.random.default_rng(0).integers(0, len(X), 3 * len(X))
        for start in range(0, len(order), 50):
            rows = order[start : start + 50]
            decisions = app.predict_batch(
                "cancer", X[rows].tolist(), default_actions=rule[rows].tolist()
            )
            for j, d in zip(rows, decisions, strict=True):
                assert d.action == rule[j] and d.probability == 1.0
                app.feedback("cancer", d.event_id, loss=float(d.action != y[j]))
        repeat = app.feedback("cancer", decisions[-1].event_id, loss=0.0)
        assert repeat.status == "already_accepted"
        admin.checkpoint("cancer")  # every accepted feedback applied
        info = app.get_model("cancer")
        assert info.mode == "apprentice" and info.apprentice is not None
        assert info.apprentice["recent_agreement_rate"] > 0.9
        assert info.apprentice["default_feedback"] == len(order)
        with server.client() as http:  # /metrics may answer a rendering a few seconds old
            deadline = time.monotonic() + 15
            series = 'banditree_apprentice_agreement_ratio{model="cancer"}'
            while series not in http.get("/metrics").text:
                assert time.monotonic() < deadline, "the apprentice gauge never appeared"
                time.sleep(0.2)
        tree, version = app.tree("cancer"), info.version
        with pytest.raises(BanditreeError) as forbidden:
            app.set_mode("cancer", "online")
        assert forbidden.value.status == 403
        switched = admin.set_mode("cancer", "online")
        assert switched.mode == "online" and switched.version == version
        assert app.tree("cancer") == tree  # what it learned is kept
        played = [app.predict("cancer", x.tolist(), default_action=0) for x in X[:100]]
        assert {d.action for d in played} == {0, 1} and min(d.probability or 1 for d in played) < 1
        logged = list(app.export_log("cancer"))  # the apprentice's feedback, all of it
        assert logged and all(r["source"] == "feedback" for r in logged)
        assert {r["propensity"] for r in logged} == {1.0}  # it played the defaults
    server.stop(signal.SIGKILL)  # no final checkpoint: the switch itself was checkpointed
    restarted = live_servers(env)
    with Client(restarted.url, api_key="app") as app:
        assert app.get_model("cancer").mode == "online"
        assert app.tree("cancer") == tree
