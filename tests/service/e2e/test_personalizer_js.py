"""Contract: Microsoft's JavaScript Personalizer clients through Node.js, unchanged, with
the endpoint set to the server's root and a key scoped to one model.

``tests/personalizer_js/contract.js`` runs every operation of
``@azure/cognitiveservices-personalizer`` 2.0.1 and ``@azure-rest/ai-personalizer``
1.0.0-beta.1 (installed from the lockfile by ``npm ci`` in ``tests/personalizer_js``, as
``.ci/run`` does) and prints each answer; the statuses are Personalizer's documented ones.
The server speaks HTTPS (the REST client will not send a key over plain HTTP); Node
trusts its test certificate through ``NODE_EXTRA_CA_CERTS``, outside the code.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.service.tls_server import TlsLiveServer, self_signed

PACKAGE = Path(__file__).resolve().parents[2] / "personalizer_js"
MENU_KEY = "menu-key-1"
SCOPED = f'[{{"key": "{MENU_KEY}", "roles": ["predict", "read", "admin"], "models": ["menu"]}}]'
#: each operation's status: Personalizer's (the REST client's responseMap), or its documented
#: refusal naming why
EXPECTED = {
    ("cognitiveservices", "rank"): 201,
    ("cognitiveservices", "events.reward"): 204,
    ("cognitiveservices", "events.activate"): 204,
    ("cognitiveservices", "events.reward (unknown event)"): 404,
    ("rest", "rank"): 201,
    ("rest", "events.reward"): 204,
    ("rest", "events.activate"): 204,
    ("rest", "multislot.rank"): 201,
    ("rest", "multislot.events.activate"): 204,
    ("rest", "multislot.events.reward"): 204,
    ("rest", "configurations.service.get"): 200,
    ("rest", "configurations.service.put"): 200,
    ("rest", "configurations.policy.get"): 200,
    ("rest", "configurations.policy.put"): 200,
    ("rest", "configurations.policy.delete"): 200,
    ("rest", "evaluations.create"): 201,
    ("rest", "evaluations.get"): 200,
    ("rest", "evaluations.list"): 200,
    ("rest", "configurations.applyFromEvaluation"): 204,
    ("rest", "evaluations.delete"): 204,
    ("rest", "logs.properties"): 200,
    ("rest", "model.properties"): 200,
    ("rest", "model.get"): 200,
    ("rest", "model.put"): 204,
    ("rest", "logs.interactions"): 400,
    ("rest", "logs.observations"): 400,
    ("rest", "logs.delete"): 204,
    ("rest", "model.delete"): 204,
}


def node_ready() -> str | None:
    """Why the Node contract cannot run here (None: it can)."""
    if shutil.which("node") is None:
        return "node is not installed"
    if not (PACKAGE / "node_modules").is_dir():
        return "run 'npm ci' in tests/personalizer_js first (.ci/run does)"
    return None


@pytest.fixture
def tls_server(tmp_path: Path) -> Iterator[Callable[[dict[str, str]], TlsLiveServer]]:
    """Starts HTTPS servers with the given env; each is stopped at the end."""
    cert, key = self_signed(tmp_path)
    started: list[TlsLiveServer] = []

    def start(env: dict[str, str]) -> TlsLiveServer:
        log_path = tmp_path / f"server-{len(started)}.log"
        started.append(TlsLiveServer(env, log_path=log_path, cert=cert, key=key))
        return started[-1]

    yield start
    for server in started:
        if server.process.poll() is None:
            server.stop(signal.SIGKILL)


def run_contract(server: TlsLiveServer, key: str, clients: str) -> list[dict[str, Any]]:
    env = {"PATH": os.environ["PATH"], "CONTRACT_CLIENTS": clients,
           "NODE_EXTRA_CA_CERTS": str(server.cert)}  # fmt: skip
    done = subprocess.run(
        ["node", str(PACKAGE / "contract.js"), server.url, key],
        capture_output=True, text=True, timeout=300, cwd=PACKAGE, env=env,
    )  # fmt: skip
    assert done.returncode == 0, f"{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return [json.loads(line) for line in done.stdout.splitlines() if line.startswith("{")]


@pytest.mark.slow
@pytest.mark.skipif(node_ready() is not None, reason=str(node_ready()))
def test_every_javascript_operation_works_at_the_root(
    tls_server: Callable[[dict[str, str]], TlsLiveServer], tmp_path: Path
) -> None:
    env = {
        "BANDITREE_ADMIN_KEYS": "admin-key",
        "BANDITREE_SCOPED_KEYS": SCOPED,
        "BANDITREE_DATA_DIR": str(tmp_path / "data"),
    }
    server = tls_server(env)
    admin = httpx.Client(
        base_url=server.url, headers={"Authorization": "Bearer admin-key"}, verify=server.trust()
    )
    with admin:
        _check_contract(server, admin)


def _check_contract(server: TlsLiveServer, admin: httpx.Client) -> None:
    created = admin.put("/v1/models/menu", json={"task": "ranking"})
    assert created.status_code == 201, created.text
    answers = run_contract(server, MENU_KEY, "cognitiveservices,rest")
    seen = {(a["client"], a["operation"]): a for a in answers}
    assert set(seen) == set(EXPECTED)
    for operation, status in EXPECTED.items():
        assert seen[operation]["status"] == status, seen[operation]

    ranked = seen["cognitiveservices", "rank"]["body"]
    assert ranked["eventId"] == "js-legacy-1" and ranked["rewardActionId"] != "salad"
    assert ranked["ranking"][0]["id"] == ranked["rewardActionId"]
    unknown = seen["cognitiveservices", "events.reward (unknown event)"]["body"]
    assert unknown["error"]["code"] == "ResourceNotFound"
    slots = seen["rest", "multislot.rank"]["body"]["slots"]
    assert [s["id"] for s in slots] == ["main", "side"]
    explored = seen["rest", "configurations.service.put"]["body"]
    assert explored["explorationPercentage"] == pytest.approx(10.0)
    evaluation = seen["rest", "evaluations.get"]["body"]
    assert evaluation["status"] == "completed", evaluation
    assert {p["name"] for p in evaluation["policyResults"]} == {"Online", "greedy"}
    assert [e["id"] for e in seen["rest", "evaluations.list"]["body"]] == [evaluation["id"]]
    assert seen["rest", "model.get"]["body"]["bytes"] > 1000
    refused = seen["rest", "logs.interactions"]["body"]["error"]["message"]
    assert "reinforcement_learning client library" in refused
    assert admin.get("/v1/models/menu").json()["version"] == 0  # it ends with a model reset
