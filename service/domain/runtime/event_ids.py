"""Event ids: unguessable, cheap to make, neighbours in a store's index.

An event id is 36 hex digits: the time in milliseconds (12 digits), then 96 random bits
(24 digits).  The random bits come from the operating system's CSPRNG (``secrets``),
drawn in blocks of :data:`BLOCK_IDS` ids at a time rather than one system call per
id: each id's bits are still independent and unpredictable (knowing every other id
tells nothing about it), at a fraction of the cost.  A block is never shared: it is
taken under a lock, and a forked child drops its parent's block.  The time prefix makes
successive ids neighbours in a store's index, so the embedded store appends decisions
to the end of its B-tree instead of writing a random page for each.
"""

from __future__ import annotations

import os
import secrets
import threading
import time

#: ids whose random bits one draw from the CSPRNG supplies
BLOCK_IDS = 4096
_HEX_PER_ID = 24  # 96 bits


class _Pool:
    """Random hex digits drawn from ``secrets`` in blocks, handed out once each."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.digits = ""
        self.at = 0

    def reset(self) -> None:
        self.digits, self.at = "", 0

    def take(self, count: int) -> str:
        """``24 * count`` fresh random hex digits."""
        need = _HEX_PER_ID * count
        with self.lock:
            if self.at + need > len(self.digits):
                self.digits = secrets.token_bytes(12 * max(BLOCK_IDS, count)).hex()
                self.at = 0
            start = self.at
            self.at = start + need
            return self.digits[start : start + need]


_POOL = _Pool()
os.register_at_fork(after_in_child=_POOL.reset)


def new_event_ids(count: int) -> list[str]:
    """``count`` fresh event ids: the time in milliseconds (12 hex digits), then 96 random bits."""
    prefix = f"{time.time_ns() // 1_000_000:012x}"
    noise = _POOL.take(count)
    if count == 1:
        return [prefix + noise]
    return [prefix + noise[i : i + _HEX_PER_ID] for i in range(0, _HEX_PER_ID * count, _HEX_PER_ID)]
