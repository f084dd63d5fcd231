"""Every code block of the README and the docs runs as a reader would run it.

One test per page: its Python blocks are executed in one namespace, its shell blocks by
bash (sharing variables and a working directory), its JavaScript blocks by Node.js (each
on its own, when ``tests/personalizer_js`` has its packages), in page order.  Blocks that talk to
``127.0.0.1:8000`` run against a live ``banditree`` server started here with the
embedded store on a spare port and the keys the pages use (``app-key``, ``admin-key``).
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import traceback
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.docs.examples import NODE_PACKAGES, ROOT, Block, blocks, pages, point_at
from tests.service.live_server import LiveServer

PAGES = pages()
CODE = ("python", "shell", "javascript")
#: a scoped key for the Personalizer pages: it reaches model "menu" only
MENU_KEY = '[{"key": "menu-key", "roles": ["predict", "read", "admin"], "models": ["menu"]}]'
#: the pages with a block to run (the others hold prose, tables and not-run blocks only)
RUNNABLE_PAGES = [
    page for page in PAGES if any(b.language in CODE and not b.not_run for b in blocks(page))
]
SHELL_TIMEOUT_SECONDS = 300
#: the shell state a block leaves to the next one of its page: its own variables
_SAVE_STATE = """
for __name in $(compgen -v); do
  [[ $__name == __* || " $__BASELINE " == *" $__name "* ]] || declare -p "$__name" 2>/dev/null
done > "$__STATE"
"""


@pytest.fixture(scope="module")
def docs_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """A service like the reader's ``banditree serve`` with the keys the pages export."""
    data = tmp_path_factory.mktemp("docs-server")
    env = {
        "BANDITREE_DATA_DIR": str(data / "data"),
        "BANDITREE_API_KEYS": "app-key",
        "BANDITREE_ADMIN_KEYS": "admin-key",
        "BANDITREE_SCOPED_KEYS": MENU_KEY,
    }
    env = {k: v for k, v in os.environ.items() if not k.startswith("BANDITREE_")} | env
    server = LiveServer(env, log_path=data / "server.log")
    yield server
    server.stop()


def _shell_env() -> dict[str, str]:
    """The reader's shell: the project's Python and ``banditree`` first on the path."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("BANDITREE_")}
    env["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{env.get('PATH', '')}"
    env["PYTHONPATH"] = str(ROOT)
    return env


def _run_shell(block: Block, code: str, workdir: Path) -> None:
    state = workdir / ".shell-state"
    script = (
        f"__BASELINE=\"$(compgen -v | tr '\\n' ' ')\"; __STATE={shlex.quote(str(state))}\n"
        f'[ -f "$__STATE" ] && source "$__STATE"\n'
        "set -euo pipefail\n" + code + _SAVE_STATE
    )
    done = subprocess.run(
        ["bash", "-c", script],
        cwd=workdir,
        env=_shell_env(),
        capture_output=True,
        text=True,
        timeout=SHELL_TIMEOUT_SECONDS,
    )
    if done.returncode != 0:
        pytest.fail(
            f"{block.id}: the shell block exited {done.returncode}\n{code}\n"
            f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"
        )


def _run_javascript(block: Block, code: str, workdir: Path) -> None:
    script = workdir / f"block-{block.line}.js"
    script.write_text(code)
    env = {**_shell_env(), "NODE_PATH": str(NODE_PACKAGES)}
    done = subprocess.run(
        ["node", str(script)], cwd=workdir, env=env, capture_output=True, text=True,
        timeout=SHELL_TIMEOUT_SECONDS,
    )  # fmt: skip
    if done.returncode != 0:
        pytest.fail(
            f"{block.id}: the JavaScript block exited {done.returncode}\n{code}\n"
            f"--- stdout\n{done.stdout[-4000:]}\n--- stderr\n{done.stderr[-4000:]}"
        )


def _node_ready() -> bool:
    """Node and the packages of tests/personalizer_js (.ci/run installs both)."""
    return shutil.which("node") is not None and NODE_PACKAGES.is_dir()


def _run_python(block: Block, code: str, namespace: dict[str, object]) -> None:
    try:
        exec(compile(code, block.id, "exec"), namespace)
    except Exception:
        pytest.fail(f"{block.id}: the Python block failed\n{code}\n{traceback.format_exc()}")


@pytest.mark.parametrize(
    "page", RUNNABLE_PAGES, ids=[str(p.relative_to(ROOT)) for p in RUNNABLE_PAGES]
)
def test_page_examples_run(
    page: Path,
    request: pytest.FixtureRequest,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    runnable = [b for b in blocks(page) if b.language in CODE and not b.not_run]
    if not _node_ready():  # without `npm ci` in tests/personalizer_js, the rest still runs
        runnable = [b for b in runnable if b.language != "javascript"]
    url = (
        request.getfixturevalue("docs_server").url
        if any(b.needs_server for b in runnable)
        else None
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(ROOT))
    namespace: dict[str, object] = {"__name__": "__docs__"}
    for block in runnable:
        code = point_at(block.code, url) if url else block.code
        if block.language == "python":
            _run_python(block, code, namespace)
        elif block.language == "javascript":
            _run_javascript(block, code, tmp_path)
        else:
            _run_shell(block, code, tmp_path)


def test_not_run_blocks_say_why_and_are_few() -> None:
    """Python blocks always run; a shell block may be skipped only with a reason."""
    skipped = [b for page in PAGES for b in blocks(page) if b.not_run]
    for block in skipped:
        assert block.language == "shell", f"{block.id}: a Python block must run"
        assert len(block.not_run or "") >= 10, f"{block.id}: give the reason it cannot run"
    runnable = [b for page in PAGES for b in blocks(page) if b.language in ("python", "shell")]
    assert len(skipped) * 3 < len(runnable), [b.id for b in skipped]


def test_readme_is_a_short_door() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 150
    for command in ("make serve", "make test"):
        assert f"\n{command}\n" in readme, command
    for target in ("docs/tutorials/library.md", "docs/tutorials/service.md", "docs/index.md"):
        assert f"]({target}" in readme, target
        assert (ROOT / target).is_file(), target


def test_every_setting_is_described() -> None:
    """The settings reference is generated from the field descriptions: none may be empty."""
    from service.settings import Settings

    missing = [name for name, field in Settings.model_fields.items() if not field.description]
    assert not missing, missing
