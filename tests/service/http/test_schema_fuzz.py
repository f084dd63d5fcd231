"""Schema fuzzing: schemathesis (every check) against a live server, for both stores
and a Redis Cluster.

Every operation is exercised with generated valid and invalid requests, the coverage
phase's boundary values and stateful sequences that follow the OpenAPI links (create a
model, then use it); every answer must match the OpenAPI document (status, headers,
body schema), no answer may be a 5xx, invalid data must be refused and valid data
accepted.  The Personalizer-compatible routes (under the model and at the root) are
fuzzed on a ranking model made first.
The expected-status lists widened for two checks are in schemathesis.toml, each with its
reason.  Examples per operation are bounded so both runs take about a
minute.
"""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from tests.service.conftest import REDIS_URL, delete_prefix
from tests.service.live_server import LiveServer
from tests.service.own_cluster import OwnCluster, needs_redis_cluster

ADMIN, USER = "fuzz-admin", "fuzz-user"
CONFIG = Path(__file__).with_name("schemathesis.toml")
EXAMPLES_PER_OPERATION = 4
#: ... over a Redis Cluster: the same routes and store code as on one Redis; what the
#: cluster adds (each model's keys on one master, global keys in their own slot, scripts
#: per master) is met by any case that reaches the store, so a few hundred cases
#: (fuzzing and stateful sequences, not the coverage phase's boundary values, which the
#: other runs try on the same routes) suffice
CLUSTER_EXAMPLES_PER_OPERATION = 2
CLUSTER_PHASES = "examples,fuzzing,stateful"
PZ_MODEL = "pz-fuzz"


@pytest.fixture(
    params=[
        "embedded",
        pytest.param("redis", marks=pytest.mark.redis),
        pytest.param("cluster", marks=needs_redis_cluster),
    ]
)
def store_env(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[dict[str, str]]:
    """Server settings for one store; a Redis run gets its own key prefix, deleted after;
    the cluster run a Redis Cluster of its own (3 masters, no replica), stopped after."""
    if request.param == "embedded":
        yield {"BANDITREE_DATA_DIR": str(tmp_path / "data")}
        return
    if request.param == "cluster":
        cluster = OwnCluster(tmp_path / "cluster", size=3, replicas=0)
        try:
            cluster.start()
            yield {"BANDITREE_REDIS_URL": cluster.url, "BANDITREE_REDIS_PREFIX": "fuzz:"}
        finally:
            cluster.stop()
        return
    prefix = f"banditree-test:{uuid.uuid4().hex}:"
    yield {"BANDITREE_REDIS_URL": REDIS_URL, "BANDITREE_REDIS_PREFIX": prefix}
    delete_prefix(prefix)


def test_schemathesis_finds_nothing(
    live_servers: Callable[[dict[str, str]], LiveServer],
    store_env: dict[str, str],
    tmp_path: Path,
    request: pytest.FixtureRequest,
) -> None:
    cluster = request.node.callspec.params["store_env"] == "cluster"
    examples = CLUSTER_EXAMPLES_PER_OPERATION if cluster else EXAMPLES_PER_OPERATION
    server = live_servers(
        {
            **store_env,
            "BANDITREE_API_KEYS": USER,
            "BANDITREE_ADMIN_KEYS": ADMIN,
            "BANDITREE_MAX_BATCH": "8",
            "BANDITREE_MAX_BODY_BYTES": "1048576",
            # the root Personalizer routes (/personalizer/...) serve the same ranking model
            "BANDITREE_PERSONALIZER_MODEL": PZ_MODEL,
        }
    )
    # the Personalizer routes' model (schemathesis.toml names it): a ranking model
    created = httpx.put(
        f"{server.url}/v1/models/{PZ_MODEL}", json={"task": "ranking"},
        headers={"Authorization": f"Bearer {ADMIN}"},
    )  # fmt: skip
    assert created.status_code == 201, created.text
    command = [
        sys.executable, "-m", "schemathesis.cli", "--config-file", str(CONFIG),
        "run", f"{server.url}/openapi.json",
        "--checks", "all",
        "--max-examples", str(examples),
        "--seed", "20240501",
        "--header", f"Authorization: Bearer {ADMIN}",
        "--request-timeout", "20",
        "--no-color",
        *(["--phases", CLUSTER_PHASES] if cluster else []),
    ]  # fmt: skip
    run = subprocess.run(
        command, capture_output=True, text=True, timeout=600, check=False, cwd=tmp_path
    )  # its cache goes to tmp_path
    report = run.stdout[-20000:] + run.stderr[-5000:]
    print(run.stdout[-1200:])  # the summary: phases, checks, test cases (shown with -s or -rP)
    assert run.returncode == 0, report
    # every operation was selected and tested: 26, the console's 4 (whoami, leaves, trace,
    # a checkpoint's tree) and the 29 root Personalizer routes with and without a version
    assert "94/94" in run.stdout, report
    assert "Traceback" not in server.log_text(), server.log_text()[-5000:]
