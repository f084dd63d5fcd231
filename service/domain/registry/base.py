"""What every part of the registry shares: its models, locks, discovery signal, policies."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import socket
import uuid
import weakref
from collections.abc import AsyncIterator
from typing import Any

from service.domain.runtime import ModelLearner, ModelRuntime, Policy
from service.domain.runtime.api import Residency
from service.domain.runtime.heap import HeapFreezer
from service.domain.runtime.idle import IdleLearners
from service.domain.runtime.share import LeaseShare
from service.domain.runtime.snapshot import SnapshotWatcher
from service.domain.schemas import ModelPolicy
from service.settings import Settings
from service.store import Store
from service.store.base import within_budget
from service.telemetry.metrics import ServiceMetrics


class RegistryBase:
    """Named runtimes and learners backed by a :class:`Store`."""

    def __init__(self, *, store: Store, settings: Settings, metrics: ServiceMetrics) -> None:
        self.store, self.settings, self.metrics = store, settings, metrics
        self.runtimes: dict[str, ModelRuntime] = {}  # the served models loaded (on first use)
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
        # the record of every model served or learned, loaded or not
        self.records: dict[str, str] = {}
        # loaded runtimes and learners' models, least recently used first (a bound lets go)
        self.resident = Residency(settings.max_resident_models)
        self.resident_learners = Residency(settings.max_resident_models)
        self._configs: dict[str, dict[str, Any]] = {}  # learner configs, one per distinct
        self._starting: asyncio.Task[None] | None = None  # learners started after start()
        self._unswept: list[str] = []  # models not loaded, to sweep in turn (serving)
        # a view of each model not loaded, by (newest checkpoint sequence, kind of view)
        self._views: dict[str, tuple[tuple[int, str], Any]] = {}
        # a fresh learner's config and summary, by config (models with no checkpoint)
        self._fresh: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {}
        self._config_forms: dict[str, dict[str, Any]] = {}  # stored config -> JSON form
        self._discovery_wanted = asyncio.Event()
        self._creating = 0  # creates past the model cap's check, not yet in ``runtimes``
        # every create, first load and delete of this process bumps the generation and
        # marks its model with it: a discovery pass leaves alone the models changed after
        # it read the store's list (what it read about them is already out of date)
        self.generation = 0
        self._changed: dict[str, int] = {}
        self._discovering = asyncio.Lock()  # one discovery (or write-back) pass at a time
        self.store_changes = 0  # the store's count of record saves and deletes, as last seen
        # the store's epoch and count of record changes a whole discovery pass reconciled
        self._reconciled: tuple[str, int] | None = None
        # models (name -> uid) whose store log ended before an offset this process saw
        self._behind: dict[str, str] = {}
        # models (name -> uid) the store answered it does not hold (deleted, or lost)
        self._gone: dict[str, str] = {}
        # those of them whose record stayed: when that was first seen (time.monotonic())
        self._lost_since: dict[str, float] = {}
        # new models' objects out of the collector's walks (not with CPython's defaults)
        self.freezer = HeapFreezer(enabled="gc" not in settings.library_paths)
        self.idle = IdleLearners(
            store, holder=self.holder, lease_seconds=settings.lease_seconds,
            on_pass=functools.partial(_idle_pass_seen, metrics),
        )  # fmt: skip
        self.share = LeaseShare(
            store, holder=self.holder, lease_seconds=settings.lease_seconds,
            models=lambda: len(self.learners), hand_over=self._hand_over,
            discover=self.want_discovery,
            led_gauge=metrics.models_led, share_gauge=metrics.fair_share,
            applied=metrics.applied_entries,
        )  # fmt: skip

    def _hand_over(self, count: int) -> None:
        """Wake ``count`` leading learners: over its share, this process hands them over."""
        leading = [learner for learner in self.learners.values() if learner.token is not None]
        for learner in leading[:count]:
            learner.wake()

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

    def touch(self, name: str) -> None:
        """Mark ``name`` as changed by this process now (created, loaded or deleted)."""
        self.generation += 1
        self._changed[name] = self.generation

    def changed_since(self, name: str, generation: int) -> bool:
        """Whether this process created, loaded or deleted ``name`` after ``generation``."""
        return self._changed.get(name, 0) > generation

    def forget_changes(self, generation: int) -> None:
        """Drop the marks of changes made up to ``generation`` (no pass reads them again)."""
        self._changed = {n: g for n, g in self._changed.items() if g > generation}

    def went_back(self, name: str, uid: str) -> None:
        """Model ``name`` (``uid``) found its log behind what this process saw: the next
        discovery pass checks that the store still holds that model (not a namesake
        created since), then starts a new epoch so that every process writes back."""
        self._behind[name] = uid
        self.want_discovery()

    def gone(self, name: str, uid: str) -> None:
        """The store answered it does not hold model ``name`` (``uid``): deleted elsewhere
        (the next discovery pass drops it) or its keys lost while its record stayed (a
        Redis Cluster master restarted empty: the pass starts a new epoch, so that every
        process writes back, see :meth:`LearningRegistry.discover`)."""
        self._gone[name] = uid
        self.want_discovery()

    def saw_store_changes(self, changes: int) -> None:
        """The store answered this count of record saves and deletes."""
        self.store_changes = max(self.store_changes, changes)

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

    def _waker(self, name: str) -> Any:
        def wake() -> None:
            learner = self.learners.get(name)
            if learner is not None:
                learner.wake()

        return wake

    def _publish(self, runtime: ModelRuntime) -> None:
        name = runtime.name
        self.runtimes[name] = runtime
        self.touch(name)
        self.metrics.models_loaded.set(len(self.runtimes))
        self.freezer.soon()  # its long-lived objects out of full collections
        self.resident.loaded(name, lambda: self._let_go(name, runtime))

    def _let_go(self, name: str, runtime: ModelRuntime) -> bool:
        """Unload the served ``runtime`` of ``name`` unless busy (a create, load or delete
        of the name under way, or a decision under a caller's id being made): True when
        it is unloaded (its next request loads it again from the store)."""
        if self.runtimes.get(name) is not runtime:
            return True  # already replaced or forgotten
        lock = self._locks.get(name)
        if runtime.given_in_flight or (lock is not None and lock.locked()):
            return False
        del self.runtimes[name]
        self.metrics.models_loaded.set(len(self.runtimes))
        return True


def _idle_pass_seen(metrics: ServiceMetrics, seconds: float, learners: int) -> None:
    """A pass over the idle learners took ``seconds`` for ``learners``: in the metrics."""
    metrics.idle_pass.observe(seconds)
    metrics.idle_pass_learners.set(learners)
