"""Event ids: 36 hex digits (milliseconds, then 96 random bits), never repeated, in order."""

from __future__ import annotations

import os
import re
import threading
import time

from service.domain.runtime import api as event_ids
from service.domain.runtime.api import BLOCK_IDS, new_event_ids

ID = re.compile("[0-9a-f]{36}")


def test_ids_hold_the_time_then_random_bits_and_never_repeat() -> None:
    before = time.time_ns() // 1_000_000
    ids = [i for count in (1, 3, BLOCK_IDS - 1, 1, 2 * BLOCK_IDS, 5) for i in new_event_ids(count)]
    after = time.time_ns() // 1_000_000
    assert all(ID.fullmatch(i) for i in ids)
    assert len(set(ids)) == len(ids)
    assert all(before <= int(i[:12], 16) <= after for i in ids)
    assert len({i[12:] for i in ids}) == len(ids)  # the random parts differ, too
    # the random digits are evenly spread (a block is hex of CSPRNG bytes, not a counter)
    digits = "".join(i[12:] for i in ids)
    counts = [digits.count(c) for c in "0123456789abcdef"]
    assert max(counts) < 1.1 * min(counts)


def test_threads_never_share_random_bits() -> None:
    found: list[list[str]] = [[] for _ in range(4)]

    def draw(out: list[str]) -> None:
        for _ in range(3000):
            out.extend(new_event_ids(2))

    threads = [threading.Thread(target=draw, args=(out,)) for out in found]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    every = [i[12:] for out in found for i in out]
    assert len(set(every)) == len(every)


def test_a_forked_child_draws_its_own_bits() -> None:
    new_event_ids(1)  # the parent holds a block
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - runs in the child
        os.write(write, new_event_ids(1)[0][12:].encode())
        os._exit(0)
    os.waitpid(child, 0)
    in_child = os.read(read, 64).decode()
    os.close(read)
    os.close(write)
    assert in_child != new_event_ids(1)[0][12:]
    assert event_ids._POOL.digits.find(in_child) == -1  # not a slice of the parent's block
