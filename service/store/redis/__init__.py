"""Redis store: shared by every process pointed at the same Redis.

Keys (under ``prefix``, a model's keys share the hash tag ``{name}``): ``models`` (hash
name -> record), ``ev:{name}:<id>`` (pending decision, expires at its keep-until),
``done:{name}:<id>`` (tombstone ``used`` / ``expired``), ``due:{name}`` (sorted set of
deadlines, swept by every process), ``log:{name}`` (the feedback log, a Stream with ids
``<offset>-0``), ``ctr:{name}`` (hash: ``log_last``, fencing ``token``, checkpoint
``sequence``), ``lease:{name}`` (``holder|token`` with expiry), ``ckpt:{name}`` (hash
sequence -> checkpoint bytes), ``ckpts:{name}`` (sorted set of checkpoint infos),
``req:{name}`` (checkpoint asked for), ``sync:{name}`` (written by a log read that
waits for replicas), ``epoch`` (the store's epoch id), ``learners`` (sorted set of
learner processes by heartbeat expiry) and the channel ``snapshots`` (model names).  ``ctr:{name}`` also holds the ``mark`` of a held model.  In a Redis
Cluster the global keys are ``{global}:models``, ``{global}:epoch`` and
``{global}:learners`` (one slot; see :mod:`.cluster`).

One module per concern, composed into :class:`RedisStore`: the client (:mod:`.client`),
model records (:mod:`.records`), pending decisions (:mod:`.decisions`), the log
(:mod:`.log`), leases (:mod:`.leases`), checkpoints (:mod:`.checkpoints`) and
notifications (:mod:`.notifications`).  Every multi-key step is one Lua script
(:mod:`.scripts`), but the decision writes: those of concurrent predictions go to Redis
as one ``MULTI``/``EXEC`` transaction per model, in one round trip, one batch in flight
at a time (:mod:`.decision_writes`, on the connection of :mod:`.wire`).  Durability is
Redis's own: with ``appendonly yes`` and ``appendfsync everysec`` at most the last
second is at risk if the Redis host dies.
"""

from __future__ import annotations

from service.store.protocols import Store
from service.store.redis.checkpoints import RedisCheckpoints
from service.store.redis.decisions import RedisDecisions
from service.store.redis.leases import RedisLeases
from service.store.redis.log import RedisLog
from service.store.redis.notifications import RedisNotifications
from service.store.redis.records import RedisRecords


class RedisStore(
    RedisRecords,
    RedisDecisions,
    RedisLog,
    RedisLeases,
    RedisCheckpoints,
    RedisNotifications,
    Store,
):
    """Decisions, the log, leases and checkpoints in Redis."""


__all__ = ["RedisStore"]
