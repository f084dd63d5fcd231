"""The models one process serves and learns: create, restore at start, discover, delete.

A process with role ``api`` or ``all`` serves models (:class:`ModelRuntime`, loaded on
first use or at start); a process with role ``learner`` or ``all`` runs a
:class:`ModelLearner` for every stored model, of which the one holding the model's lease
learns and the others stand by.  Models created by another process are discovered
every ``snapshot_poll_seconds`` (and those deleted by another process dropped), unless
the store lost its data meanwhile (a new store epoch): then this process writes its
models back (:mod:`service.recovery`) instead of dropping them.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import json
import logging
import os
import socket
import time
import uuid
import weakref
from collections.abc import AsyncIterator
from typing import Any

from banditree.learners import Apprentice, Learner, LearnerConfig, build_learner
from banditree.learners.validation import InvalidInput, check_loss
from banditree.persistence import dumps
from banditree.supervised.model_file import InvalidModelFile, TrainedTree
from service.checkpoint_restore import newest_valid_checkpoint
from service.domain_errors import (
    CapacityReached,
    InvalidRequest,
    ModelExists,
    ModelNotFound,
    Unavailable,
)
from service.metrics import ServiceMetrics
from service.recovery import HeldModel, write_back
from service.runtime import LearnerPolicy, ModelLearner, ModelRuntime, Policy
from service.runtime.idle import IdleLearners
from service.runtime.snapshot import SnapshotWatcher
from service.runtime.tasks import LoopShare
from service.schemas import ModelCreate, ModelPolicy
from service.settings import Settings
from service.store import ModelGone, Store, StoreUnavailable
from service.store.budget import within_budget

log = logging.getLogger("banditree.service")


def _build(config: LearnerConfig, initial_model: str | None) -> Learner:
    """A fresh learner, warm-started from a base64 ``banditree train`` file when given."""
    if initial_model is None:
        return build_learner(config)
    return build_learner(config, initial_model=TrainedTree.from_base64(initial_model))


class _NotCounted:
    def inc(self, amount: float = 1.0) -> None:
        """Count nothing."""


class ModelRegistry:
    """Named runtimes and learners backed by a :class:`Store`."""

    def __init__(self, *, store: Store, settings: Settings, metrics: ServiceMetrics) -> None:
        self.store, self.settings, self.metrics = store, settings, metrics
        self.runtimes: dict[str, ModelRuntime] = {}
        self.learners: dict[str, ModelLearner] = {}
        self.holder = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.serves = settings.role in ("all", "api")
        self.learns = settings.role in ("all", "learner")
        self.watcher = SnapshotWatcher(
            lambda: list(self.runtimes.values()), poll_seconds=settings.snapshot_poll_seconds
        )
        self._locks: weakref.WeakValueDictionary[str, asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )  # per name, dropped with its last user
        self.epoch: str | None = None  # the store epoch this process's models are held in
        self.records: dict[str, str] = {}  # the record of every model served or learned
        self._discovery_wanted = asyncio.Event()
        self._creating = 0  # creates past the model cap's check, not yet in ``runtimes``
        self.idle = IdleLearners(store, holder=self.holder, lease_seconds=settings.lease_seconds)

    @contextlib.asynccontextmanager
    async def _locked(self, name: str) -> AsyncIterator[None]:
        """The lock of model ``name``: its create, first load and delete never overlap.

        One lock per name, so requests for other models never wait for it (with
        thousands of models, creates and first loads run side by side); waiting for it
        spends the request's store budget, as the calls of the request holding it do.
        """
        lock = self._locks.get(name)
        if lock is None:  # kept while a request holds or awaits it (weakly referenced)
            lock = self._locks[name] = asyncio.Lock()
        await within_budget(lock.acquire())
        try:
            yield
        finally:
            lock.release()

    def want_discovery(self) -> None:
        """Look at the store's models (and epoch) now rather than at the next poll."""
        self._discovery_wanted.set()

    async def discovery_due(self, interval_seconds: float) -> None:
        """Wait ``interval_seconds``, or less when :meth:`want_discovery` was called."""
        try:
            await asyncio.wait_for(self._discovery_wanted.wait(), interval_seconds)
        except TimeoutError:
            pass
        self._discovery_wanted.clear()

    def _policy(self, policy: ModelPolicy) -> Policy:
        s = self.settings
        default_loss = policy.default_loss if policy.default_loss is not None else s.default_loss
        return Policy(
            checkpoint_every_updates=policy.checkpoint_every_updates or s.checkpoint_every_updates,
            checkpoint_every_seconds=policy.checkpoint_every_seconds or s.checkpoint_every_seconds,
            event_ttl_seconds=policy.event_ttl_seconds or s.event_ttl_seconds,
            default_loss=default_loss,
            checkpoint_keep=s.checkpoint_keep,
        )

    # -- serving -----------------------------------------------------------------------
    async def _restore(self, name: str, record_json: str) -> ModelRuntime:
        record = json.loads(record_json)
        config = LearnerConfig.from_stored(record["config"])
        uid, policy = record["uid"], self._policy(ModelPolicy.model_validate(record["policy"]))
        metrics = self.metrics.for_model(name)
        found = await newest_valid_checkpoint(
            self.store, name, await self.store.list_checkpoints(name),
            expected_config=config.model_dump(mode="json"),
            # a learner of this process counts the same corrupt checkpoints
            corrupt_total=_NotCounted() if self.learns else metrics.checkpoint_corrupt,
        )  # fmt: skip
        learner, info = found if found is not None else (build_learner(config), None)
        log.info("model %s restored at version %d", name, learner.version)
        runtime = ModelRuntime(
            name=name, uid=uid, learner=learner, policy=policy, store=self.store,
            metrics=metrics, last_checkpoint=info, wake_learner=self._waker(name),
            on_gone=self.want_discovery,
        )  # fmt: skip
        await runtime.refresh_bounds()
        self.records[name] = record_json
        return runtime

    def _waker(self, name: str) -> Any:
        def wake() -> None:
            learner = self.learners.get(name)
            if learner is not None:
                learner.wake()

        return wake

    def _publish(self, runtime: ModelRuntime) -> None:
        self.runtimes[runtime.name] = runtime
        self.metrics.models_loaded.set(len(self.runtimes))
        # A model holds hundreds of long-lived objects (its learner, its metric series):
        # with thousands of models, each full collection of the cyclic garbage collector
        # walks a million objects and holds the event loop for most of a second.  Move
        # what exists now out of its reach (constant time); what is made later is still
        # collected.  The cost: reference cycles among a deleted model's objects are kept.
        gc.freeze()

    async def start(self) -> None:
        """Restore every stored model (serving roles) and start learners (learning roles)."""
        self.epoch = await self.store.epoch()
        for name, record in (await self.store.load_models()).items():
            try:
                await self.store.hold_model(name)  # a no-op unless stored by an older release
                if self.serves:
                    self._publish(await self._restore(name, record))
                if self.learns:
                    self._start_learner(name, record)
            except (KeyError, TypeError, ValueError) as err:
                log.error("model %s could not be restored: %s", name, err)
        if self.serves:
            self.watcher.start()

    async def get(self, name: str) -> ModelRuntime:
        """The runtime of ``name``; loads it from the store when another process created it."""
        runtime = self.runtimes.get(name)
        if runtime is not None:
            return runtime
        if not self.serves:
            raise Unavailable(
                "this process only learns (role learner): send requests to an api process"
            )
        async with self._locked(name):
            if name in self.runtimes:
                return self.runtimes[name]
            record = await self.store.load_model(name)
            if record is None:
                raise ModelNotFound(name)
            runtime = await self._restore(name, record)
            self._publish(runtime)
            return runtime

    # -- learning ----------------------------------------------------------------------
    def _start_learner(self, name: str, record_json: str) -> None:
        if name in self.learners:
            return
        record = json.loads(record_json)
        policy = self._policy(ModelPolicy.model_validate(record["policy"]))
        learner = ModelLearner(
            name=name, uid=record["uid"],
            config=LearnerConfig.from_stored(record["config"]).model_dump(mode="json"),
            policy=LearnerPolicy(
                every_updates=policy.checkpoint_every_updates,
                every_seconds=policy.checkpoint_every_seconds, keep=policy.checkpoint_keep,
                default_loss=policy.default_loss, lease_seconds=self.settings.lease_seconds,
            ),
            store=self.store, metrics=self.metrics.for_model(name), holder=self.holder,
            on_gone=self.want_discovery, idle=self.idle,
        )  # fmt: skip
        self.records[name] = record_json
        self.learners[name] = learner
        learner.start()

    async def discover(self) -> None:
        """Start learners for models created elsewhere; stop those of deleted models.

        Models missing from the store are dropped only when the store's epoch is the one
        they were held in, read after the records: a store that lost its data gets them
        written back instead (:meth:`recover`).
        """
        records = await self.store.load_models()
        epoch = await self.store.epoch()
        if epoch != self.epoch:
            await self.recover(epoch)
            return
        share = LoopShare()
        if self.serves:  # replicas hold every model, so each one serves its newest snapshot
            for name in [n for n in records if n not in self.runtimes]:
                await share.turn()
                await self.get(name)
        if self.learns:
            for name, record in records.items():
                if name not in self.learners:
                    await share.turn()
                    self._start_learner(name, record)
        for name in [n for n in self.learners if n not in records]:
            await share.turn()
            await self.learners.pop(name).stop()
        for name in [n for n in self.runtimes if n not in records]:
            self.runtimes.pop(name, None)
            self.metrics.forget_model(name)
        for name in [n for n in self.records if n not in records]:
            del self.records[name]

    async def recover(self, epoch: str) -> None:
        """Write this process's models back to a store that lost its data (now ``epoch``)."""
        if not self.serves:
            # a learner-only process has no snapshot to offer: let serving processes (which
            # do) hold the models first, so their snapshots are what learning restarts from
            await asyncio.sleep(2 * self.settings.snapshot_poll_seconds)
        names = sorted(set(self.runtimes) | set(self.learners))
        log.error(
            "the store lost its data (epoch %s, was %s): writing back %d models",
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

    # -- create / delete -------------------------------------------------------------
    async def create(self, name: str, body: ModelCreate) -> ModelRuntime:
        """A new model; 409 when the name is taken or ``max_models`` are served already.

        The cap counts the creates in flight too: the check and the reservation run
        with no ``await`` between them, so creates of other names racing for the last
        places (each under its own name's lock) cannot all pass it.
        """
        config, policy = body.split()
        if body.initial_model is not None:  # recorded as built, so its checkpoints match it
            config = config.for_initial_model()
        async with self._locked(name):
            if name in self.runtimes or await self.store.load_model(name) is not None:
                raise ModelExists(name)
            held, limit = len(self.runtimes) + self._creating, self.settings.max_models
            if held >= limit:
                raise CapacityReached(held, limit)
            self._creating += 1
            try:
                return await self._create(name, body, config, policy)
            finally:
                self._creating -= 1

    async def _create(
        self, name: str, body: ModelCreate, config: LearnerConfig, policy: ModelPolicy
    ) -> ModelRuntime:
        """:meth:`create` once the name is free and a place under the cap is reserved."""
        try:
            learner = _build(config, body.initial_model)
        except InvalidModelFile as err:
            raise InvalidRequest(f"initial_model: {err}", "initial_model") from None
        except ValueError as err:
            raise InvalidRequest(str(err), "kind") from None
        resolved = self._policy(policy)
        if resolved.default_loss is not None:
            try:
                check_loss(resolved.default_loss, getattr(learner, "loss_bounds", None))
            except InvalidInput as err:
                raise InvalidRequest(f"default_loss: {err}", "default_loss") from None
        record: dict[str, Any] = {
            "uid": uuid.uuid4().hex,
            "config": config.model_dump(mode="json"),
            "policy": policy.model_dump(mode="json"),
            "created_at": time.time(),
        }
        record_json = json.dumps(record, sort_keys=True)
        await self.store.hold_model(name)
        if body.initial_model is not None:
            await self._save_initial(name, learner)
        await self.store.save_model(name, record_json)
        runtime = ModelRuntime(
            name=name, uid=record["uid"], learner=learner, policy=resolved,
            store=self.store, metrics=self.metrics.for_model(name),
            wake_learner=self._waker(name), on_gone=self.want_discovery,
        )  # fmt: skip
        self.records[name] = record_json
        self._publish(runtime)
        if self.learns:
            self._start_learner(name, record_json)
        return runtime

    async def _save_initial(self, name: str, learner: Learner) -> None:
        """A warm-started model's first checkpoint (offset 0), written before its record.

        Whichever process learns the model restores it from here instead of building a
        cold learner, so a restart (or a learner elsewhere) resumes from the warm start.
        The operator token (-1) fences out any lease a deleted namesake left behind.
        """
        blob = await asyncio.to_thread(dumps, learner)
        await self.store.save_checkpoint(
            name, version=learner.version, blob=blob, keep=self.settings.checkpoint_keep,
            now=time.time(), offset=0, acked_at=0.0, token=-1,
        )  # fmt: skip

    async def delete(self, name: str) -> None:
        """Stop and forget ``name`` with its decisions, log and checkpoints."""
        await self.get(name)
        async with self._locked(name):
            # read first: an unreachable store refuses the delete (503) before anything
            # changes, and a delete that fails half way leaves the model served and learned
            record = await self.store.load_model(name)
            if record is None and await self.store.epoch() != self.epoch:
                self.want_discovery()
                raise Unavailable(
                    "the store lost its data; this model is being written back: retry"
                )
            if record is None:
                raise ModelNotFound(name)
            learner = self.learners.pop(name, None)
            try:
                if learner is not None:
                    await learner.stop()
                await self.store.delete_model(name)
            except StoreUnavailable:
                if learner is not None:
                    self._start_learner(name, record)
                raise
            self.runtimes.pop(name, None)
            self.records.pop(name, None)
            self.metrics.forget_model(name)
            self.metrics.models_loaded.set(len(self.runtimes))

    async def close(self) -> None:
        """Stop the watcher; every learner publishes what it learned and gives its lease back."""
        await self.watcher.stop()
        for learner in list(self.learners.values()):
            try:
                await learner.stop()
            except StoreUnavailable as err:
                log.error("learner of model %s could not stop cleanly: %s", learner.name, err)
        await self.idle.stop()

    async def sweep(self) -> None:
        """Expire overdue decisions of every served model."""
        now, share = time.time(), LoopShare()
        for runtime in list(self.runtimes.values()):
            await share.turn()  # thousands of models: requests run between them
            try:
                await runtime.sweep(now)
            except ModelGone:
                self.want_discovery()
            except Exception as err:  # a store hiccup must not stop the maintenance loop
                log.error("maintenance of model %s failed: %s", runtime.name, err)

    async def refresh_gauges(self) -> None:
        """Pending decisions, log length and lease holder of every model, for a scrape."""
        now, share = time.time(), LoopShare()
        for runtime in list(self.runtimes.values()):
            await share.turn()
            try:
                await runtime.refresh_gauges(now)
            except Exception as err:
                log.error("gauges of model %s: %s", runtime.name, err)
            if isinstance(runtime.learner, Apprentice):
                self._apprentice_gauges(runtime.name, runtime.learner)

    def _apprentice_gauges(self, name: str, learner: Apprentice) -> None:
        figures = learner.agreement()
        metrics = self.metrics
        for key, series in (
            ("recent_agreement_rate", metrics.apprentice_agreement.labels(name)),
            ("estimated_reward", metrics.apprentice_reward_estimate.labels(name, "own")),
            (
                "default_estimated_reward",
                metrics.apprentice_reward_estimate.labels(name, "default"),
            ),
        ):
            value = figures[key]
            series.set(float("nan") if value is None else float(value))
