"""Embedded store: pending events in process memory, records and checkpoints as files.

Files live under ``data_dir/models/<name>/``: ``model.json`` and
``checkpoints/<sequence>-v<version>.safetensors``.  Every file is written atomically
(temporary file, fsync, rename, fsync of the directory), so a crash leaves either the
old file or the new one.  Pending events do not survive a restart.
"""

from __future__ import annotations

import asyncio
import heapq
import os
import re
import shutil
from dataclasses import dataclass, field
from pathlib import Path

from service.store.base import CheckpointInfo, EventLookup, Store, event_deadlines

_CHECKPOINT_NAME = re.compile(r"^(\d{10})-v(\d+)\.safetensors$")


def write_atomically(path: Path, data: bytes) -> None:
    """Replace ``path`` with ``data`` so that readers see the old or the new file, whole."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(tmp, "wb") as handle:
        handle.write(data)
        handle.flush()
        os.fsync(handle.fileno())
    os.replace(tmp, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)


@dataclass
class _ModelEvents:
    pending: dict[str, tuple[float, float, str]] = field(default_factory=dict)
    deadlines: list[tuple[float, str]] = field(default_factory=list)
    tombstones: dict[str, tuple[str, float]] = field(default_factory=dict)
    tombstone_order: list[tuple[float, str]] = field(default_factory=list)

    def bury(self, event_id: str, mark: str, until: float) -> None:
        self.tombstones[event_id] = (mark, until)
        heapq.heappush(self.tombstone_order, (until, event_id))

    def purge(self, now: float) -> None:
        order = self.tombstone_order
        while order and order[0][0] <= now:
            _, event_id = heapq.heappop(order)
            mark = self.tombstones.get(event_id)
            if mark is not None and mark[1] <= now:
                del self.tombstones[event_id]


class EmbeddedStore(Store):
    """The default store: works on a bare machine, one process."""

    def __init__(self, data_dir: Path) -> None:
        self.root = Path(data_dir) / "models"
        self._events: dict[str, _ModelEvents] = {}

    def _dir(self, name: str) -> Path:
        return self.root / name

    async def ping(self) -> None:
        await asyncio.to_thread(self.root.mkdir, parents=True, exist_ok=True)
        if not os.access(self.root, os.W_OK):
            raise OSError(f"data directory {self.root} is not writable")

    async def close(self) -> None:
        return None

    # -- model records -------------------------------------------------------------
    async def save_model(self, name: str, record: str) -> None:
        await asyncio.to_thread(write_atomically, self._dir(name) / "model.json", record.encode())

    async def load_model(self, name: str) -> str | None:
        path = self._dir(name) / "model.json"
        return path.read_text() if path.is_file() else None

    async def load_models(self) -> dict[str, str]:
        if not self.root.is_dir():
            return {}
        return {
            path.parent.name: path.read_text()
            for path in sorted(self.root.glob("*/model.json"))
            if path.is_file()
        }

    async def delete_model(self, name: str) -> None:
        self._events.pop(name, None)
        await asyncio.to_thread(shutil.rmtree, self._dir(name), True)

    # -- pending events --------------------------------------------------------------
    async def put_events(
        self, name: str, events: list[tuple[str, str]], *, now: float, ttl_seconds: float
    ) -> None:
        model = self._events.setdefault(name, _ModelEvents())
        deadline, keep_until = event_deadlines(now, ttl_seconds)
        for event_id, payload in events:
            model.pending[event_id] = (deadline, keep_until, payload)
            heapq.heappush(model.deadlines, (deadline, event_id))

    def _lookup(self, name: str, event_id: str, now: float) -> tuple[_ModelEvents, EventLookup]:
        model = self._events.setdefault(name, _ModelEvents())
        entry = model.pending.get(event_id)
        if entry is not None and entry[1] > now:
            if now <= entry[0]:
                return model, EventLookup("pending", entry[2])
            return model, EventLookup("expired", entry[2])
        mark = model.tombstones.get(event_id)
        if mark is not None and mark[1] > now:
            return model, EventLookup("duplicate" if mark[0] == "used" else "expired")
        return model, EventLookup("unknown")

    async def peek_event(self, name: str, event_id: str, *, now: float) -> EventLookup:
        return self._lookup(name, event_id, now)[1]

    async def claim_event(self, name: str, event_id: str, *, now: float) -> EventLookup:
        model, found = self._lookup(name, event_id, now)
        if found.status != "pending":
            return EventLookup(found.status)
        _, keep_until, payload = model.pending.pop(event_id)
        model.bury(event_id, "used", keep_until)
        return EventLookup("claimed", payload)

    async def claim_expired(self, name: str, *, now: float, limit: int) -> list[str]:
        model = self._events.get(name)
        if model is None:
            return []
        model.purge(now)
        taken: list[str] = []
        while model.deadlines and model.deadlines[0][0] < now and len(taken) < limit:
            deadline, event_id = heapq.heappop(model.deadlines)
            entry = model.pending.get(event_id)
            if entry is None or entry[0] != deadline:
                continue  # claimed already (or re-issued)
            del model.pending[event_id]
            model.bury(event_id, "expired", entry[1])
            taken.append(entry[2])
        return taken

    async def pending_count(self, name: str) -> int:
        model = self._events.get(name)
        return 0 if model is None else len(model.pending)

    # -- checkpoints -----------------------------------------------------------------
    def _checkpoints(self, name: str) -> list[tuple[CheckpointInfo, Path]]:
        directory = self._dir(name) / "checkpoints"
        found = []
        if directory.is_dir():
            for path in directory.iterdir():
                match = _CHECKPOINT_NAME.match(path.name)
                if match:
                    stat = path.stat()
                    info = CheckpointInfo(
                        int(match.group(1)), int(match.group(2)), stat.st_mtime, stat.st_size
                    )
                    found.append((info, path))
        return sorted(found, key=lambda item: item[0].sequence, reverse=True)

    def _save_checkpoint(self, name: str, version: int, blob: bytes, keep: int) -> CheckpointInfo:
        existing = self._checkpoints(name)
        sequence = existing[0][0].sequence + 1 if existing else 1
        path = self._dir(name) / "checkpoints" / f"{sequence:010d}-v{version}.safetensors"
        write_atomically(path, blob)
        for _, old in existing[keep - 1 :]:
            old.unlink(missing_ok=True)
        return CheckpointInfo(sequence, version, path.stat().st_mtime, len(blob))

    async def save_checkpoint(
        self, name: str, *, version: int, blob: bytes, keep: int, now: float
    ) -> CheckpointInfo:
        return await asyncio.to_thread(self._save_checkpoint, name, version, blob, keep)

    async def list_checkpoints(self, name: str) -> list[CheckpointInfo]:
        return [info for info, _ in self._checkpoints(name)]

    async def load_checkpoint(self, name: str, sequence: int) -> bytes | None:
        for info, path in self._checkpoints(name):
            if info.sequence == sequence:
                return await asyncio.to_thread(path.read_bytes)
        return None
