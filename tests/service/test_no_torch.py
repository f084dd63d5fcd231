"""Serving never imports torch: the app, the client and the commands run on numpy.

Each check runs in a fresh interpreter (this test process may hold torch already, from
other tests): it builds the app in-process, creates a DGT, a TEL and a hinge model,
predicts with each and sends feedback, then reports whether ``torch`` was imported.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SERVE = textwrap.dedent(
    """
    import json, os, sys
    os.environ["BANDITREE_DATA_DIR"] = sys.argv[1]
    os.environ["BANDITREE_ADMIN_KEYS"] = "admin"
    from fastapi.testclient import TestClient
    import banditree.client
    from service.main import create_app_from_env

    seen = {}
    with TestClient(create_app_from_env()) as http:
        http.headers["authorization"] = "Bearer admin"
        seen["app"] = "torch" in sys.modules
        for kind in ("dgt", "tel", "hinge"):
            body = {"kind": kind, "n_features": 3, "n_actions": 4, "accumulate": 1}
            http.put(f"/v1/models/m-{kind}", json=body).raise_for_status()
            answer = http.post(f"/v1/models/m-{kind}/predict", json={"context": [0.1, 0.2, 0.3]})
            answer.raise_for_status()
            seen[f"predict {kind}"] = "torch" in sys.modules
            event = answer.json()["event_id"]
            http.post(
                f"/v1/models/m-{kind}/feedback", json={"event_id": event, "loss": 0.25}
            ).raise_for_status()
            seen[f"feedback {kind}"] = "torch" in sys.modules
    print(json.dumps(seen))
    """
)

COMMANDS = textwrap.dedent(
    """
    import json, sys
    from typer.testing import CliRunner
    from banditree_cli import app

    seen = {}
    runner = CliRunner()
    for args in (["--help"], ["serve", "--help"], ["log", "export", "--help"],
                 ["models", "import", "--help"], ["evaluate", "--help"]):
        result = runner.invoke(app, args)
        assert result.exit_code == 0, (args, result.output)
        seen[" ".join(args)] = "torch" in sys.modules

    # evaluate a small log written as the service exports it
    import numpy as np
    from pathlib import Path
    from banditree.learners import Feedback, build_learner
    from banditree.logs import log_row, open_log_writer

    out = Path(sys.argv[1])
    learner = build_learner({"n_features": 3, "n_actions": 2, "seed": 1})
    rng = np.random.default_rng(0)
    rows = []
    for i in range(200):
        x = rng.normal(size=3)
        d = learner.act(x, event_id=f"e{i}")
        f = Feedback(loss=float(d.action != int(x[0] > 0)))
        learner.learn(d, f)
        rows.append(log_row(d, f, offset=i + 1, time_seconds=float(i)))
    with open_log_writer(out / "log.csv") as writer:
        writer.write(rows)
    (out / "linear.json").write_text(json.dumps({"kind": "linear"}))
    result = runner.invoke(app, [
        "evaluate", str(out / "log.csv"), "--config", str(out / "linear.json"),
        "--out", str(out / "ev"), "--n-bootstrap", "20", "--no-progress",
    ])
    assert result.exit_code == 0, result.output
    seen["evaluate"] = "torch" in sys.modules

    # what `models import` reads: a trained tree's file
    from banditree.models.dgt.trained import TrainedTree
    seen["model file"] = "torch" in sys.modules
    print(json.dumps(seen))
    """
)


def _run(script: str, *args: str) -> dict[str, bool]:
    done = subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    seen: dict[str, bool] = json.loads(done.stdout.strip().splitlines()[-1])
    return seen


def test_serving_dgt_tel_and_hinge_never_imports_torch(tmp_path: Path) -> None:
    seen = _run(SERVE, str(tmp_path / "data"))
    assert len(seen) == 7
    assert not any(seen.values()), seen


def test_commands_never_import_torch(tmp_path: Path) -> None:
    seen = _run(COMMANDS, str(tmp_path))
    assert len(seen) == 7
    assert not any(seen.values()), seen
