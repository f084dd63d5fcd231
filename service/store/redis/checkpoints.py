"""Checkpoints in Redis: bytes in the hash ``ckpt:{name}`` (sequence -> blob), infos in
the sorted set ``ckpts:{name}`` (``seq|version|created|size|offset|acked|token`` by
sequence).  A save is the ``SAVE_CHECKPOINT`` script, which also trims the log and
publishes the model's name on the ``snapshots`` channel.
"""

from __future__ import annotations

from typing import Any

from service.store.base import CheckpointInfo, FencedOut
from service.store.protocols import CheckpointStore
from service.store.redis.client import RedisBase, gone, text, unavailable


def parse_info(member: Any) -> CheckpointInfo:
    """A checkpoint's info from its member of ``ckpts:{name}``."""
    seq, version, created, size, offset, acked, token = text(member).split("|")
    return CheckpointInfo(
        int(seq), int(version), float(created), int(size), int(offset), float(acked), int(token)
    )


class RedisCheckpoints(RedisBase, CheckpointStore):
    """Save, list and load checkpoints."""

    @unavailable
    async def save_checkpoint(
        self,
        name: str,
        *,
        version: int,
        blob: bytes,
        keep: int,
        now: float,
        offset: int,
        acked_at: float,
        token: int,
    ) -> CheckpointInfo:
        keys = [self._key(kind, name) for kind in ("ctr", "ckpt", "ckpts", "log", "lease")]
        issued = self._lease_marks.get(name)
        args: list[Any] = [
            token, version, repr(now), len(blob), offset, repr(acked_at), keep, blob,
            self.prefix + "snapshots", name, issued[1] if issued and issued[0] == token else "",
            self.keep_bytes or 0,
        ]  # fmt: skip
        reply = await self._run("SAVE_CHECKPOINT", keys, args)
        if text(reply[0]) == "gone":
            raise gone(name)
        if text(reply[0]) == "fenced":
            raise FencedOut(f"fencing token {token} is older than {int(reply[1])}")
        return CheckpointInfo(
            int(reply[1]), version, now, len(blob), offset, acked_at, int(reply[2])
        )

    @unavailable
    async def list_checkpoints(self, name: str, limit: int = 0) -> list[CheckpointInfo]:
        key = self._key("ckpts", name)
        members: list[Any] = await self.client.zrevrange(key, 0, limit - 1 if limit > 0 else -1)
        return [parse_info(member) for member in members]

    @unavailable
    async def load_checkpoint(self, name: str, sequence: int) -> bytes | None:
        value = await self.client.hget(self._key("ckpt", name), str(sequence))
        return value if isinstance(value, bytes) else None
