"""Feedback log figures: learner throughput, recovery time, Redis memory per 1,000 items.

One command::

    python -m benchmarks.scale.log_scale [--entries 100000] [--throughput-entries 20000]

1. Feedback throughput of one learner for DGT h=6 (16 features, 10 actions): log
   entries read from the store in batches and applied by the learner's own code path
   (:func:`service.domain.runtime.replay.apply_entry`), against the bare ``learner.learn``
   loop on the same pairs in the same run (the ratio shows the log's overhead).
   Goal: >= 5,000 feedbacks per second.
2. Recovery time: a learner that starts with ``--entries`` log entries after its
   checkpoint (what it finds after ``kill -9``) reads and replays them all; for the
   SQLite store and for Redis.
3. Redis memory (``MEMORY USAGE`` of the model's keys) per 1,000 pending decisions and
   per 1,000 log entries.
4. Retention: rounds of ``--retention-entries`` feedbacks, each followed by a
   checkpoint (3 kept): the log entries held and the bytes used (SQLite files on disk,
   Redis memory) stay bounded while the appended total grows.  Claimed decisions are
   remembered for ``max(ttl, 300 s)`` (to answer a repeat with 409), so they add a
   bounded ``rate x 300 s`` on top.

Needs Redis on 127.0.0.1:6379 for the Redis figures (keys under a unique prefix,
deleted afterwards).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from banditree.core.codec import decision_payload, feedback_json
from banditree.learners import Feedback, build_learner
from service.domain.runtime.replay import apply_entry
from service.store import RedisStore, SqliteStore, Store

REDIS_URL = "redis://127.0.0.1:6379/0"
CONFIG = {"kind": "dgt", "height": 6, "n_features": 16, "n_actions": 10, "seed": 0}
UID = "bench"


def make_pairs(n: int) -> list[tuple[str, str, str]]:
    """``(event_id, decision payload, feedback JSON)`` of ``n`` decisions of a fresh model."""
    rng = np.random.default_rng(0)
    actor = build_learner(CONFIG)
    pairs = []
    for i in range(n):
        decision = actor.act(rng.normal(size=16), event_id=f"e{i:08d}")
        loss = float(decision.action != int(rng.integers(10)))
        pairs.append(
            (decision.event_id, decision_payload(UID, decision), feedback_json(Feedback(loss=loss)))
        )
    return pairs


async def fill(store: Store, pairs: list[tuple[str, str, str]], now: float) -> None:
    """Store the decisions, then log each one's feedback (the service's two steps)."""
    await store.hold_model("m")  # as the service does when it creates the model
    chunk = 50
    for start in tqdm(range(0, len(pairs), chunk), desc="filling the log", leave=False):
        part = pairs[start : start + chunk]
        await store.put_events("m", [(e, d) for e, d, _ in part], now=now, ttl_seconds=3600)
        await asyncio.gather(*(store.append_feedback("m", e, f, now=now) for e, _, f in part))


async def replay_all(store: Store) -> tuple[int, float]:
    """Read the whole log in batches and apply it to a fresh learner: (entries, seconds)."""
    started = time.perf_counter()
    learner = build_learner(CONFIG)
    offset, applied = 0, 0
    while entries := await store.read_log("m", after=offset, limit=512):
        for entry in entries:
            apply_entry(learner, entry, uid=UID, default_loss=None)
        offset, applied = entries[-1].offset, applied + len(entries)
    return applied, time.perf_counter() - started


def bare_learn_seconds(pairs: list[tuple[str, str, str]]) -> float:
    """The same pairs through ``learner.learn`` directly (no store, no decoding)."""
    from banditree.core.codec import read_decision

    decoded = [(read_decision(d, UID), Feedback(**json.loads(f))) for _, d, f in pairs]
    learner = build_learner(CONFIG)
    started = time.perf_counter()
    for decision, feedback in decoded:
        assert decision is not None
        learner.learn(decision, feedback)
    return time.perf_counter() - started


async def redis_memory(prefix: str, n: int) -> dict[str, float]:
    """Bytes per 1,000 pending decisions and per 1,000 log entries (MEMORY USAGE)."""
    store = RedisStore.from_url(REDIS_URL, prefix=prefix, timeout_seconds=5.0)
    pairs = make_pairs(n)
    now = time.time()
    await store.hold_model("m")
    await store.put_events("m", [(e, d) for e, d, _ in pairs], now=now, ttl_seconds=3600)

    async def usage(pattern: str) -> int:
        total = 0
        async for key in store.client.scan_iter(match=prefix + pattern, count=1000):
            total += int(await store.client.memory_usage(key, samples=0) or 0)
        return total

    pending = await usage("ev:*") + await usage("due:*") + await usage("ctr:*")
    await asyncio.gather(*(store.append_feedback("m", e, f, now=now) for e, _, f in pairs))
    log = await usage("log:*")
    keys = [k async for k in store.client.scan_iter(match=prefix + "*", count=1000)]
    if keys:
        await store.client.delete(*keys)
    await store.close()
    return {
        "bytes_per_1000_pending_decisions": pending * 1000 / n,
        "bytes_per_1000_log_entries": log * 1000 / n,
    }


async def run(args: argparse.Namespace) -> dict[str, Any]:
    figures: dict[str, Any] = {}
    pairs = make_pairs(args.throughput_entries)
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp))
        await fill(store, pairs, time.time())
        bare = bare_learn_seconds(pairs)
        applied, seconds = await replay_all(store)
        await store.close()
    figures["learner_throughput_per_second"] = applied / seconds
    figures["bare_learn_throughput_per_second"] = len(pairs) / bare
    figures["learner_vs_bare_ratio"] = (
        figures["learner_throughput_per_second"] / figures["bare_learn_throughput_per_second"]
    )
    big = make_pairs(args.entries)
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp))
        await fill(store, big, time.time())
        applied, seconds = await replay_all(store)
        await store.close()
    figures["sqlite_recovery_seconds"] = seconds
    figures["sqlite_recovery_entries"] = applied
    with tempfile.TemporaryDirectory() as tmp:
        store = SqliteStore(Path(tmp))

        async def disk_bytes() -> int:
            return sum(p.stat().st_size for p in Path(tmp).glob("banditree.sqlite3*"))

        series = await retention(store, args.retention_rounds, args.retention_entries, disk_bytes)
        await store.close()
    figures["sqlite_retention"] = series
    if not args.no_redis:
        prefix = f"banditree-bench:{uuid.uuid4().hex}:"
        redis = RedisStore.from_url(REDIS_URL, prefix=prefix, timeout_seconds=5.0)
        try:
            await fill(redis, big, time.time())
            applied, seconds = await replay_all(redis)
        finally:
            keys = [k async for k in redis.client.scan_iter(match=prefix + "*", count=1000)]
            if keys:
                await redis.client.delete(*keys)
            await redis.close()
        figures["redis_recovery_seconds"] = seconds
        figures["redis_recovery_entries"] = applied
        figures.update(await redis_memory(f"banditree-bench:{uuid.uuid4().hex}:", 2000))
        prefix = f"banditree-bench:{uuid.uuid4().hex}:"
        redis = RedisStore.from_url(REDIS_URL, prefix=prefix, timeout_seconds=5.0)

        async def memory_bytes() -> int:
            total = 0
            async for key in redis.client.scan_iter(match=prefix + "*", count=1000):
                total += int(await redis.client.memory_usage(key, samples=0) or 0)
            return total

        try:
            figures["redis_retention"] = await retention(
                redis, args.retention_rounds, args.retention_entries, memory_bytes
            )
        finally:
            keys = [k async for k in redis.client.scan_iter(match=prefix + "*", count=1000)]
            if keys:
                await redis.client.delete(*keys)
            await redis.close()
    return figures


async def retention(store: Store, rounds: int, per_round: int, size: Any) -> list[dict[str, float]]:
    """Append ``per_round`` feedbacks, then checkpoint (keep 3): log length and size per round."""
    series = []
    await store.hold_model("m")
    token = await store.acquire_lease("m", "bench", ttl_seconds=3600, now=time.time())
    assert token is not None
    blob = b"x" * 8000
    for round_index in tqdm(range(rounds), desc="retention", leave=False):
        pairs = [(f"r{round_index}-{e}", d, f) for e, d, f in make_pairs(per_round)]
        await fill(store, pairs, time.time())
        bounds = await store.log_bounds("m")
        await store.save_checkpoint(
            "m", version=round_index, blob=blob, keep=3, now=time.time(), offset=bounds.last,
            acked_at=0.0, token=token,
        )  # fmt: skip
        after = await store.log_bounds("m")
        series.append({"appended": float(bounds.last), "log_entries": float(after.length),
                       "bytes": float(await size())})  # fmt: skip
    return series


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=100_000, help="log entries to recover")
    parser.add_argument("--throughput-entries", type=int, default=20_000)
    parser.add_argument("--no-redis", action="store_true", help="skip the Redis figures")
    parser.add_argument("--retention-rounds", type=int, default=10)
    parser.add_argument("--retention-entries", type=int, default=2000, help="per round")
    parser.add_argument("--out", type=Path, default=None, help="write the figures as JSON")
    args = parser.parse_args()
    figures = asyncio.run(run(args))
    for key, value in figures.items():
        if isinstance(value, list):  # retention: one row per round
            print(f"{key} (appended, log entries held, bytes):")
            for row in value:
                print(
                    f"    {row['appended']:>10,.0f} {row['log_entries']:>10,.0f} {row['bytes']:>14,.0f}"
                )
        else:
            print(f"{key:40s} {value:,.2f}")
    goal = figures["learner_throughput_per_second"] >= 5000
    print(f"goal learner >= 5,000 feedbacks/s (DGT h=6): {'met' if goal else 'NOT met'}")
    if args.out is not None:
        args.out.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
