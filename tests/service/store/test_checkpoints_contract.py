"""Both stores keep one contract for checkpoints and notifications: fencing, retention."""

from __future__ import annotations

import pytest

from service.store import FencedOut, Store

pytestmark = pytest.mark.anyio

T0 = 1_000_000.0


async def test_a_stale_token_cannot_write_a_checkpoint(store: Store) -> None:
    await store.hold_model("m")
    old = await store.acquire_lease("m", "a", ttl_seconds=30, now=T0)
    assert old is not None
    saved = await store.save_checkpoint(
        "m", version=1, blob=b"one", keep=5, now=T0, offset=4, acked_at=T0, token=old
    )
    await store.release_lease("m", "a", old)
    new = await store.acquire_lease("m", "b", ttl_seconds=30, now=T0)
    assert new is not None
    with pytest.raises(FencedOut):
        await store.save_checkpoint(
            "m", version=2, blob=b"stale", keep=5, now=T0, offset=9, acked_at=T0, token=old
        )
    listed = await store.list_checkpoints("m")
    assert listed == [saved] and (saved.offset, saved.acked_at, saved.token) == (4, T0, old)
    # an operator write (rollback) revokes the lease and fences its holder out
    await store.save_checkpoint(
        "m", version=1, blob=b"one", keep=5, now=T0, offset=9, acked_at=0.0, token=-1
    )
    assert await store.lease("m", now=T0) is None
    with pytest.raises(FencedOut):
        await store.save_checkpoint(
            "m", version=3, blob=b"x", keep=5, now=T0, offset=9, acked_at=T0, token=new
        )


async def test_checkpoints_keep_the_newest_and_trim_the_log(store: Store) -> None:
    await store.hold_model("m")
    events = [(f"e{i}", f"p{i}") for i in range(10)]
    await store.put_events("m", events, now=T0, ttl_seconds=10)
    for event_id, _ in events:
        await store.append_feedback("m", event_id, "{}", now=T0)
    token = await store.acquire_lease("m", "a", ttl_seconds=30, now=T0)
    assert token is not None
    for version, offset in ((1, 2), (2, 4), (3, 6), (3, 7), (7, 8)):
        info = await store.save_checkpoint(
            "m", version=version, blob=f"blob-{version}".encode(), keep=3, now=T0,
            offset=offset, acked_at=T0, token=token,
        )  # fmt: skip
        assert info.version == version and info.size_bytes == len(f"blob-{version}")
    listed = await store.list_checkpoints("m")
    assert [(i.version, i.offset) for i in listed] == [(7, 8), (3, 7), (3, 6)]
    assert [i.sequence for i in listed] == [5, 4, 3]
    assert await store.load_checkpoint("m", listed[0].sequence) == b"blob-7"
    assert await store.load_checkpoint("m", 1) is None
    assert await store.list_checkpoints("empty") == []
    # entries at or below the oldest kept checkpoint's offset (6) are gone
    assert [e.offset for e in await store.read_log("m", after=0, limit=100)] == [7, 8, 9, 10]
    assert (await store.log_bounds("m")).first == 7


async def test_checkpoint_requests_and_notices(store: Store) -> None:
    await store.hold_model("m")
    assert not await store.take_checkpoint_request("m")
    await store.request_checkpoint("m")
    assert await store.take_checkpoint_request("m")
    assert not await store.take_checkpoint_request("m")
    assert await store.snapshot_notices(0.05) == set()  # subscribes
    token = await store.acquire_lease("m", "a", ttl_seconds=30, now=T0)
    assert token is not None
    await store.save_checkpoint(
        "m", version=1, blob=b"x", keep=2, now=T0, offset=0, acked_at=0.0, token=token
    )
    assert await store.snapshot_notices(2.0) == {"m"}
