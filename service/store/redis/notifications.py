"""Checkpoint requests (``req:{name}``) and notices of new checkpoints (the channel
``snapshots``, model names, published by the checkpoint script)."""

from __future__ import annotations

import asyncio

from service.store.protocols import NotificationStore
from service.store.redis.client import RedisBase, text, unavailable
from service.store.redis.wire import store_error


class RedisNotifications(RedisBase, NotificationStore):
    """Ask a learner for a checkpoint; wait for notices of saved ones."""

    @unavailable
    async def request_checkpoint(self, name: str) -> None:
        await self.client.set(self._key("req", name), b"1")

    @unavailable
    async def take_checkpoint_request(self, name: str) -> bool:
        return bool(await self.client.delete(self._key("req", name)))

    async def snapshot_notices(self, timeout_seconds: float) -> set[str]:
        try:
            if self._pubsub is None:
                self._pubsub = self.client.pubsub(ignore_subscribe_messages=True)
                await self._pubsub.subscribe(self.prefix + "snapshots")
            names: set[str] = set()
            message = await self._pubsub.get_message(timeout=timeout_seconds)
            while message is not None:
                if message.get("type") == "message":
                    names.add(text(message["data"]))
                message = await self._pubsub.get_message(timeout=0.0)
            return names
        except Exception as err:
            # (a cluster node lost leaves redis-py's pubsub "connection not set", a
            # RuntimeError, for every later call): dropped, made again at the next call
            pubsub, self._pubsub = self._pubsub, None
            if pubsub is not None:
                await asyncio.shield(pubsub.aclose())
            raise store_error(err) from err
