"""The embedded store on a full file system (issue 41, item 2): writes fail as
``StoreFull`` (503), ``ping`` (``/readyz``) tells it, and both recover once space returns.

The file system is a small tmpfs of the test's own (root only: skipped otherwise).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from service.store import SqliteStore, StoreFull

pytestmark = pytest.mark.anyio


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A 6 MB tmpfs mounted under ``tmp_path``, unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "fs"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=6m", "tmpfs", str(mount)],
                          capture_output=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


async def test_a_full_disk_is_told_and_left_behind(small_fs: Path) -> None:
    store = SqliteStore(small_fs / "data", min_free_bytes=0)
    filler = small_fs / "filler"
    try:
        await store.hold_model("m")
        await store.ping()
        # the rest of the file system taken by another file, but for a little
        free = os.statvfs(small_fs).f_bavail * os.statvfs(small_fs).f_frsize
        filler.write_bytes(b"\0" * (free - 64 * 1024))
        with pytest.raises(StoreFull):
            for i in range(10_000):  # decisions until the database cannot grow
                events = [(f"{i:05d}{j:03d}", "p" * 500) for j in range(100)]
                await store.put_events("m", events, now=1_000.0, ttl_seconds=60)
        with pytest.raises(StoreFull):
            await store.ping()  # the probe write finds no room either
        filler.unlink()  # space returns
        await store.ping()  # ready again at once
        await store.put_events("m", [("after", "p")], now=1_000.0, ttl_seconds=60)
    finally:
        await store.close()
