"""Both stores keep one contract for learner leases: one holder, growing tokens."""

from __future__ import annotations

import asyncio

import pytest

from service.store import Store

pytestmark = pytest.mark.anyio

T0 = 1_000_000.0


async def test_one_lease_holder_and_tokens_grow(store: Store) -> None:
    await store.hold_model("m")
    first = await store.acquire_lease("m", "a", ttl_seconds=30, now=T0)
    assert first is not None
    assert await store.acquire_lease("m", "b", ttl_seconds=30, now=T0) is None
    held = await store.lease("m", now=T0)
    assert held is not None and (held.holder, held.token) == ("a", first)
    assert await store.renew_lease("m", "a", first, ttl_seconds=30, now=T0)
    assert not await store.renew_lease("m", "b", first, ttl_seconds=30, now=T0)
    await store.release_lease("m", "a", first)
    second = await store.acquire_lease("m", "b", ttl_seconds=30, now=T0)
    assert second is not None and second > first
    assert not await store.renew_lease("m", "a", first, ttl_seconds=30, now=T0)
    again = await store.acquire_lease("m", "b", ttl_seconds=30, now=T0)  # its own: a new token
    assert again is not None and again > second


async def test_a_lapsed_lease_is_taken_over(store: Store) -> None:
    await store.hold_model("m")
    first = await store.acquire_lease("m", "a", ttl_seconds=0.2, now=T0)
    assert first is not None
    await asyncio.sleep(0.3)  # Redis expires keys by its own clock
    second = await store.acquire_lease("m", "b", ttl_seconds=30, now=T0 + 0.3)
    assert second is not None and second > first
    assert not await store.renew_lease("m", "a", first, ttl_seconds=30, now=T0 + 0.3)
