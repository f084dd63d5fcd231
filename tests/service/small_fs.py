"""A small tmpfs of a test's own, to fill up (root only: the test is skipped otherwise)."""

from __future__ import annotations

import errno
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest


@contextmanager
def small_fs(where: Path, size_mb: int) -> Iterator[Path]:
    """A ``size_mb`` MB tmpfs mounted at ``where`` (made), unmounted afterwards."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    where.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size_mb}m", "tmpfs", str(where)],
        capture_output=True,
    )
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs: {done.stderr.decode().strip()}")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


def free_bytes(path: Path) -> int:
    stat = os.statvfs(path)
    return stat.f_bavail * stat.f_frsize


def fill(path: Path, leave_bytes: int) -> Path:
    """A file under ``path`` taking all but ``leave_bytes`` of its file system."""
    filler = path / "filler"
    want = max(0, free_bytes(path) - leave_bytes)
    chunk = b"\0" * (1 << 16)
    with open(filler, "ab", buffering=0) as f:
        try:  # in chunks: what a server writes meanwhile may take the last of them
            while want > 0:
                want -= f.write(chunk[: min(want, len(chunk))]) or 0
        except OSError as err:
            if err.errno != errno.ENOSPC:
                raise
    return filler
