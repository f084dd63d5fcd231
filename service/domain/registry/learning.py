"""Learning: a learner per stored model, discovery of models made or deleted elsewhere,
and the write-back of this process's models to a store that lost its data."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections.abc import Container
from typing import Any

from banditree.learners import LearnerConfig
from service.domain.recovery import HeldModel, write_back
from service.domain.registry.serving import ServingRegistry
from service.domain.runtime import LearnerPolicy, ModelLearner
from service.domain.runtime.tasks import LoopShare, stop_tasks
from service.domain.schemas import ModelPolicy
from service.store import StoreUnavailable

log = logging.getLogger("banditree.service")

#: names a pass of discovery looks at between two turns of the event loop
NAMES_PER_TURN = 256
#: distinct learner configs kept to share between models
DISTINCT_CONFIGS = 1024
#: how long a model must stay unheld with its record kept before it is written back
LOST_CONFIRM_SECONDS = 1.0


async def _absent(names: list[str], held: Container[str], share: LoopShare) -> list[str]:
    """The ``names`` not in ``held``, in order; a turn of the loop every
    :data:`NAMES_PER_TURN` names."""
    absent = []
    for start in range(0, len(names), NAMES_PER_TURN):
        await share.turn()
        absent += [name for name in names[start : start + NAMES_PER_TURN] if name not in held]
    return absent


class LearningRegistry(ServingRegistry):
    """Start, discover and stop learners; recover after a loss of the store's data."""

    async def start(self) -> None:
        """Know every stored model and start a learner for each (learning roles); load none.

        A served model is loaded on its first request (:meth:`get`), a learner's model
        when its log has entries to learn (:mod:`service.domain.runtime.learner`): with
        ten thousand models, loading them all at start took minutes and most of the
        process's memory, for models that may be idle.
        """
        self.epoch = await self.store.epoch()
        if self.learns:  # how many learn, before this process's learners take leases
            await self.share.beat()
            self.share.start()
        self.saw_store_changes(await self.store.changes())
        records = await self.store.load_models()
        self.records.update(records)
        if self.learns:  # in the background: the process answers meanwhile
            self._starting = asyncio.create_task(
                self._start_learners(records), name="start-learners"
            )
        if self.serves:
            self.watcher.start()

    async def _start_learners(self, records: dict[str, str]) -> None:
        """A learner for each of ``records`` (still known), a turn of the loop between."""
        share = LoopShare()
        for name, record in records.items():
            await share.turn()
            if self.records.get(name) != record:
                continue  # deleted or replaced meanwhile (discovery starts its own)
            try:
                self._start_learner(name, record)
            except (KeyError, TypeError, ValueError) as err:
                log.error("model %s could not be restored: %s", name, err)

    def _config(self, stored: dict[str, Any]) -> dict[str, Any]:
        """The learner config (JSON form) of a record's ``stored`` one: one dict for
        all the models of the same config (read only), not one each."""
        key = json.dumps(stored, sort_keys=True)
        config = self._configs.get(key)
        if config is None:
            if len(self._configs) >= DISTINCT_CONFIGS:  # many distinct ones: start over
                self._configs.clear()
            config = self._configs[key] = LearnerConfig.from_stored(stored).model_dump(mode="json")
        return config

    def _start_learner(self, name: str, record_json: str) -> None:
        if name in self.learners:
            return
        record = json.loads(record_json)
        policy = self._policy(ModelPolicy.model_validate(record["policy"]))
        learner = ModelLearner(
            name=name, uid=record["uid"],
            config=self._config(record["config"]),
            policy=LearnerPolicy(
                every_updates=policy.checkpoint_every_updates,
                every_seconds=policy.checkpoint_every_seconds, keep=policy.checkpoint_keep,
                default_loss=policy.default_loss, lease_seconds=self.settings.lease_seconds,
            ),
            store=self.store, metrics=lambda: self.metrics.for_model(name),
            holder=self.holder, on_gone=functools.partial(self.gone, name, record["uid"]), idle=self.idle, share=self.share,
            on_led=self.freezer.soon, resident=self.resident_learners,
        )  # fmt: skip
        self.records[name] = record_json
        self.learners[name] = learner
        learner.start()

    async def discover(self) -> None:
        """Start learners for models created elsewhere; stop those of deleted models.

        One reconciliation with this process's own creates and deletes: a model this
        process created, loaded or deleted after the list was read is left as it is (the
        list is out of date about it), and a model is dropped only under its lock, so a
        create of the same name never overlaps it.  Models missing from the store are
        dropped only when the store's epoch is the one they were held in, read after the
        records: a store that lost its data gets them written back instead (:meth:`recover`),
        and so does one that came back from an older snapshot (:meth:`went_back`).
        """
        async with self._discovering:
            if self._behind:
                await self._start_new_epoch()
            if self._gone:
                await self._write_back_lost()
            seen, expected = self.generation, self.store_changes
            # counted before the list is read: a record saved meanwhile makes the next
            # pass a whole one
            counted = await self.store.changes()
            if await self._reconciled_at(counted):
                return
            records = await self.store.load_models()
            epoch = await self.store.epoch()
            changes = await self.store.changes()
            if epoch == self.epoch and changes < expected:
                # fewer saves and deletes of records than this process saw, in the same
                # epoch: an older snapshot (which may lack models created since)
                log.error(
                    "the store came back from an older snapshot (%d record changes where "
                    "%d were seen): new epoch", changes, expected,
                )  # fmt: skip
                epoch = await self.store.new_epoch(changes=expected)
            if epoch != self.epoch:
                await self.recover(epoch)
                return
            self.saw_store_changes(changes)
            try:
                await self._reconcile(records, seen)
                self._reconciled = (epoch, counted)
            finally:
                self.forget_changes(seen)

    async def _reconciled_at(self, counted: int) -> bool:
        """Whether a whole pass already reconciled the store as it is: no record saved
        or deleted since (the store's count of them is the one that pass read first,
        and no less than this process saw), in the same epoch.  Then the pass reads
        neither the list nor anything else: with 10,000 models, reading and comparing
        the list every second held the event loop and the GIL for tens of ms."""
        if self._reconciled is None or counted < self.store_changes:
            return False
        return self._reconciled == (await self.store.epoch(), counted)

    async def _start_new_epoch(self) -> None:
        """A new epoch when a model found behind is still the one this process serves."""
        behind, self._behind = self._behind, {}
        for name, uid in behind.items():
            record = await self.store.load_model(name)
            if record is not None and json.loads(record).get("uid") == uid:
                log.error("the store came back from an older snapshot (model %s): new epoch", name)
                await self.store.new_epoch(changes=self.store_changes)
                return

    async def _write_back_lost(self) -> None:
        """A new epoch when a model the store answered it does not hold still has its
        record (the same model, in the epoch this process wrote back in), and still
        does :data:`LOST_CONFIRM_SECONDS` later: its keys were lost apart from the
        record, as when a Redis Cluster master restarts empty while the records' master
        lives on.  Every process then writes back what it serves and learns, as after a
        single Redis lost its data.  A model deleted elsewhere has no record (a delete
        in a cluster removes the keys, then the record: the wait lets it finish): the
        pass drops it."""
        gone, self._gone = self._gone, {}
        if await self.store.epoch() != self.epoch:
            return  # a write-back is due anyway (this pass's recover)
        now = time.monotonic()
        for name, uid in gone.items():
            record = await self.store.load_model(name)
            if record is None or json.loads(record).get("uid") != uid:
                self._lost_since.pop(name, None)
                continue
            since = self._lost_since.setdefault(name, now)
            if now - since >= LOST_CONFIRM_SECONDS:
                log.error(
                    "the store lost the keys of model %s (its record stayed): new epoch", name
                )
                await self.store.new_epoch(changes=self.store_changes)
                return

    async def _reconcile(self, records: dict[str, str], seen: int) -> None:
        """Serve and learn the models of ``records`` (read at generation ``seen``), drop
        the others.

        Every loop over the names takes a turn of the event loop (:class:`LoopShare`)
        every :data:`NAMES_PER_TURN` names, also where there is nothing to do for them
        (the figure: ``docs/decisions/0007-event-loop-garbage.md``).
        """
        share = LoopShare()
        names = list(records)
        if self.serves:  # known here, loaded on first use (then on its newest snapshot)
            for name in await _absent(names, self.records, share):
                if not self.changed_since(name, seen):
                    self.records[name] = records[name]
        if self.learns:
            for name in await _absent(names, self.learners, share):
                await share.turn()
                if name not in self.learners and not self.changed_since(name, seen):
                    self._start_learner(name, records[name])
        gone: set[str] = set()
        for held in (self.learners, self.runtimes, self.records):
            gone.update(await _absent(list(held), records, share))
        for name in sorted(gone):
            await share.turn()
            await self._drop(name, seen)

    async def _drop(self, name: str, seen: int) -> None:
        """Stop and forget ``name``, deleted elsewhere, unless this process changed it
        after generation ``seen``."""
        async with self._locked(name):
            if not self.changed_since(name, seen):
                await self._forget(name)

    async def _forget(self, name: str) -> None:
        """Stop ``name``'s learner and forget its runtime and record (the caller holds
        the name's lock)."""
        learner = self.learners.pop(name, None)
        if learner is not None:
            await learner.stop()
        runtime = self.runtimes.pop(name, None)
        record = self.records.pop(name, None)
        self._views.pop(name, None)
        self.resident.dropped(name)
        self.resident_learners.dropped(name)
        if learner is not None or runtime is not None or record is not None:
            self.metrics.forget_model(name)
            self.metrics.models_loaded.set(len(self.runtimes))

    async def recover(self, epoch: str) -> None:
        """Write this process's models back to a store that lost its data (now ``epoch``)."""
        if not self.serves:
            # a learner-only process has no snapshot to offer: let serving processes (which
            # do) hold the models first, so their snapshots are what learning restarts from
            await asyncio.sleep(2 * self.settings.snapshot_poll_seconds)
        names = sorted(set(self.runtimes) | set(self.learners) | set(self.records))
        log.error(
            "the store lost its data or came back older (epoch %s, was %s): writing back %d models",
            epoch, self.epoch, len(names),
        )  # fmt: skip
        models = [
            HeldModel(
                name, self.runtimes.get(name), self.learners.get(name), self.records.get(name)
            )
            for name in names
        ]
        await write_back(self.store, models)
        self.epoch = epoch
        self._gone.clear()  # held again: what they met was the loss written back
        self._lost_since.clear()

    async def close(self) -> None:
        """Stop the watcher; every learner publishes what it learned and gives its lease back."""
        await self.watcher.stop()
        if self._starting is not None:
            await stop_tasks([self._starting], 5.0)
            self._starting = None
        for learner in list(self.learners.values()):
            try:
                await learner.stop()
            except StoreUnavailable as err:
                log.error("learner of model %s could not stop cleanly: %s", learner.name, err)
        await self.idle.stop()
        self.freezer.cancel()
        if self.learns:
            await self.share.stop()
