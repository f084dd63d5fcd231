"""Browser tests of the console: Debian's chromium driven by Playwright, one browser a session.

Each test gets a fresh page on a real ``uvicorn`` service and fails on any browser console
error, uncaught page error, or request to a host other than the service.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.service.live_server import LiveServer

playwright_api = pytest.importorskip("playwright.sync_api")

ROOT = Path(__file__).resolve().parents[2]
#: where the tests write their screenshots (shown in docs/howto/console.md)
SHOTS = ROOT / "docs" / "img" / "console"
#: chromium flags: no sandbox (containers), no GPU, nothing fetched on its own
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-default-apps",
    "--no-first-run",
]
ADMIN_KEY, APP_KEY = "admin-key-for-console-tests", "app-key-for-console-tests"


def chromium_path() -> str:
    """Debian's chromium (never a browser a tool downloads)."""
    for name in (os.environ.get("BANDITREE_CHROMIUM", ""), "chromium", "chromium-browser"):
        found = shutil.which(name) if name else None
        if found:
            return found
    pytest.skip("chromium is not installed (apt-get install chromium)")


@pytest.fixture(scope="package")
def browser() -> Iterator[Any]:
    with playwright_api.sync_playwright() as p:
        browser = p.chromium.launch(
            executable_path=chromium_path(), headless=True, args=CHROMIUM_ARGS
        )
        yield browser
        browser.close()


@pytest.fixture(scope="package")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    data = tmp_path_factory.mktemp("console-data")
    live = LiveServer(
        {
            "BANDITREE_DATA_DIR": str(data),
            "BANDITREE_ADMIN_KEYS": ADMIN_KEY,
            "BANDITREE_API_KEYS": APP_KEY,
            # the console's read-only key: app keys predict only unless given read
            "BANDITREE_API_KEY_ROLES": '["predict", "read"]',
            "BANDITREE_CHECKPOINT_EVERY_SECONDS": "0.2",
            "BANDITREE_SERIES_SAMPLE_SECONDS": "1",  # the rates' samples, sooner
        },
        log_path=data / "server.log",
    )
    yield live
    live.stop()


@pytest.fixture
def admin(server: LiveServer) -> Iterator[httpx.Client]:
    with server.client(ADMIN_KEY) as client:
        yield client


class Watched:
    """A page with its console errors and foreign requests collected."""

    def __init__(self, page: Any, origin: str) -> None:
        self.page, self.origin = page, origin
        self.errors: list[str] = []
        self.foreign: list[str] = []
        #: HTTP statuses a test provokes on purpose (chromium logs each as a console error)
        self.allowed: set[int] = set()
        page.on("console", lambda m: self.errors.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: self.errors.append(str(e)))
        page.on("request", self._request)

    def _request(self, request: Any) -> None:
        parts = urlsplit(request.url)
        if parts.scheme in ("data", "blob"):
            return
        if f"{parts.scheme}://{parts.netloc}" != self.origin:
            self.foreign.append(request.url)

    def open(self, hash_path: str = "#/") -> Any:
        self.page.goto(f"{self.origin}/ui/{hash_path}")
        self.page.wait_for_selector("body[data-ready=true]")
        return self.page

    def allow(self, status: int) -> Watched:
        """Let answers of ``status`` (a refusal the test provokes) pass the console check."""
        self.allowed.add(status)
        return self

    def check(self) -> None:
        loaded = "Failed to load resource: the server responded with a status of "
        errors = [
            e for e in self.errors
            if not (e.startswith(loaded) and int(e[len(loaded) :].split()[0]) in self.allowed)
        ]  # fmt: skip
        assert not errors, f"browser console errors: {errors}"
        assert not self.foreign, f"requests to other hosts: {self.foreign}"


@pytest.fixture
def console(browser: Any, server: LiveServer) -> Iterator[Callable[..., Watched]]:
    """``console(key=ADMIN_KEY)``: a fresh page whose session holds ``key``; checked at the end."""
    opened: list[tuple[Any, Watched]] = []

    def open_page(
        key: str | None = ADMIN_KEY, *, width: int = 1400, height: int = 900, theme: str = "light"
    ) -> Watched:
        context = browser.new_context(
            viewport={"width": width, "height": height}, accept_downloads=True
        )
        script = f"sessionStorage.setItem('banditree.console.key', {key!r});" if key else ""
        context.add_init_script(
            script + f"localStorage.setItem('banditree.console.theme', '{theme}');"
        )
        watched = Watched(context.new_page(), server.url)
        opened.append((context, watched))
        return watched

    yield open_page
    try:
        for _, watched in opened:
            watched.check()
    finally:
        for context, _ in opened:
            context.close()


def shot(page: Any, name: str) -> None:
    """A screenshot for the docs (docs/img/console/<name>.png), written only when asked.

    The committed screenshots stay as they are unless ``BANDITREE_WRITE_SCREENSHOTS=1``: a plain
    test run leaves the git tree clean.
    """
    if os.environ.get("BANDITREE_WRITE_SCREENSHOTS") != "1":
        return
    SHOTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SHOTS / f"{name}.png"), full_page=False)
