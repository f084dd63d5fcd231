"""Serving: restore a model's runtime from its record and newest valid checkpoint."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from banditree.learners import LearnerConfig, build_learner
from banditree.learners.apprentice import ApprenticeModel, apprentice_model
from banditree.persistence import read_summary, summary
from service.domain.checkpoint_restore import newest_valid_checkpoint
from service.domain.errors import ModelNotFound, Unavailable
from service.domain.registry.base import RegistryBase
from service.domain.runtime import ModelRuntime
from service.domain.runtime.api import EXPIRE_CHUNK
from service.domain.runtime.glance import ModelGlance, glance
from service.domain.runtime.tasks import LoopShare
from service.domain.schemas import ModelPolicy
from service.store import CheckpointInfo, ModelGone

log = logging.getLogger("banditree.service")

T = TypeVar("T")

#: models not loaded here whose overdue decisions one sweep expires (in turn)
UNLOADED_PER_SWEEP = 500


class _NotCounted:
    def inc(self, amount: float = 1.0) -> None:
        """Count nothing."""


class ServingRegistry(RegistryBase):
    """Load served models on first use; sweep their decisions; refresh their gauges."""

    async def _restore(self, name: str, record_json: str, *, hold: bool = True) -> ModelRuntime:
        """The runtime of ``name`` on its newest valid checkpoint; ``hold`` False: only to
        look at (the store's hold of the model not checked, no metric series made)."""
        if hold:  # a no-op unless stored by an older release
            await self.store.hold_model(name)
        record = json.loads(record_json)
        config = LearnerConfig.from_stored(record["config"])
        uid, policy = record["uid"], self._policy(ModelPolicy.model_validate(record["policy"]))
        # a model restored to be looked at (not served) makes no series
        metrics = self.metrics.for_model(name) if hold else self.metrics.unexported()
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
            on_gone=functools.partial(self.gone, name, uid), on_behind=self.went_back,
            on_initial_snapshot=self.freezer.soon,
        )  # fmt: skip
        await runtime.refresh_bounds()
        self.records[name] = record_json
        return runtime

    def loaded(self, name: str) -> ModelRuntime | None:
        """:meth:`get` of a runtime already loaded (no coroutine), else None."""
        runtime = self.runtimes.get(name)
        if runtime is not None:
            self.resident.used(name)
        return runtime

    async def get(self, name: str) -> ModelRuntime:
        """The runtime of ``name``; loads it from the store when another process created it."""
        runtime = self.runtimes.get(name)
        if runtime is not None:
            self.resident.used(name)
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

    async def views(
        self, names: Iterable[str], view: Callable[[ModelGlance], T], kind: str
    ) -> list[T]:
        """``view`` of the figures of each of ``names`` this process knows, in order: of
        its runtime when it is loaded, else read from the store without restoring the
        model (its record, its newest checkpoint's header, its log bounds:
        :mod:`service.domain.runtime.glance`); the view of a model not loaded is kept,
        by ``kind``, until its newest checkpoint changes."""
        share, views = LoopShare(), []
        for name in names:
            await share.turn()
            runtime = self.runtimes.get(name)
            if runtime is not None:
                views.append(view(glance(runtime)))
                continue
            record = self.records.get(name)
            if record is None:
                continue
            newest = await self.store.list_checkpoints(name, limit=1)
            info = newest[0] if newest else None
            key = (info.sequence if info else 0, kind)
            seen = self._views.get(name)
            if seen is None or seen[0] != key:
                try:
                    looked = await self._glance_unloaded(name, record, info)
                except (KeyError, TypeError, ValueError) as err:
                    log.error("model %s could not be read: %s", name, err)
                    continue
                seen = self._views[name] = (key, view(looked))
            views.append(seen[1])
        return views

    async def _glance_unloaded(
        self, name: str, record_json: str, info: CheckpointInfo | None
    ) -> ModelGlance:
        """The figures of a model not loaded here, on its newest checkpoint ``info``.

        A model with no checkpoint shows a fresh learner's figures (one learner built
        per distinct config, not per model).  A checkpoint whose header holds no
        summary (written by an older release) is restored for the look, as before."""
        record = json.loads(record_json)
        if info is None:
            config_json, learned = self._fresh_summary(record["config"])
        else:
            blob = await self.store.load_checkpoint(name, info.sequence)
            found = read_summary(blob or b"")
            if found is None:
                return glance(await self._restore(name, record_json, hold=False))
            # the config a restore checks the checkpoint's against (equal when it restores)
            config_json = self._config_json(record["config"])
            learned = found
        bounds = await self.store.log_bounds(name)
        offset = info.offset if info else 0
        return ModelGlance(
            name=name,
            config=config_json,
            policy=self._policy(ModelPolicy.model_validate(record["policy"])),
            version=int(learned["version"]),
            counters={**learned["counters"], "decisions": max(0, bounds.decisions)},
            pending_updates=max(0, max(offset, bounds.last) - offset),
            published_at=info.created_at if info else 0.0,
            apprentice=learned["apprentice"],
        )

    def _config_json(self, stored: dict[str, Any]) -> dict[str, Any]:
        """The record's ``stored`` learner config in its JSON form (one per distinct)."""
        key = json.dumps(stored, sort_keys=True)
        found = self._config_forms.get(key)
        if found is None:
            found = self._config_forms[key] = LearnerConfig.from_stored(stored).model_dump(
                mode="json"
            )
        return found

    def _fresh_summary(self, stored: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        """The config (as a learner reports it) of the record's ``stored`` config and
        :func:`~banditree.persistence.summary` of a fresh learner of it, built once per
        distinct config (not per model)."""
        key = json.dumps(stored, sort_keys=True)
        found = self._fresh.get(key)
        if found is None:
            learner = build_learner(LearnerConfig.from_stored(stored))
            found = self._fresh[key] = (learner.config(), summary(learner))
        return found

    async def sweep(self) -> float:
        """Expire overdue decisions of every served model: the seconds the expiries took.

        Loaded models each sweep theirs; the others (not loaded here, or let go) are
        swept without loading them, :data:`UNLOADED_PER_SWEEP` a sweep in turn.
        """
        now, share = time.time(), LoopShare()
        expiring = 0.0
        for runtime in list(self.runtimes.values()):
            await share.turn()  # thousands of models: requests run between them
            try:
                expiring += await runtime.sweep(now)
            except ModelGone:
                self.want_discovery()
            except Exception as err:  # a store hiccup must not stop the maintenance loop
                log.error("maintenance of model %s failed: %s", runtime.name, err)
        if self.serves:
            await self._sweep_unloaded(now, share)
        return expiring

    async def _sweep_unloaded(self, now: float, share: LoopShare) -> None:
        """Expire the overdue decisions of up to :data:`UNLOADED_PER_SWEEP` models not
        loaded here, taken in turn (every one within ``models / UNLOADED_PER_SWEEP``
        sweeps): those made before a restart or by another process, or left when a
        model was let go.  Those of a model with a default loss go to its log, where its
        learner finds them."""
        if not self._unswept:
            self._unswept = [n for n in self.records if n not in self.runtimes]
        taken = self._unswept[-UNLOADED_PER_SWEEP:]
        del self._unswept[-UNLOADED_PER_SWEEP:]
        for name in taken:
            await share.turn()
            record = self.records.get(name)
            if record is None or name in self.runtimes:
                continue
            try:
                policy = ModelPolicy.model_validate(json.loads(record)["policy"])
                logged = self._policy(policy).default_loss is not None
                while True:
                    expired = await self.store.expire_events(
                        name, now=now, limit=EXPIRE_CHUNK, log=logged, seen=0
                    )
                    if expired:
                        self.metrics.for_model(name).expired.inc(expired)
                        if logged:
                            self._waker(name)()
                    if expired < EXPIRE_CHUNK:
                        break
                    await asyncio.sleep(0)
            except ModelGone:
                self.want_discovery()
            except Exception as err:
                log.error("maintenance of model %s failed: %s", name, err)

    async def refresh_gauges(self) -> None:
        """Pending decisions, log length and lease holder of every model, for a scrape."""
        now, share = time.time(), LoopShare()
        for runtime in list(self.runtimes.values()):
            await share.turn()
            try:
                await runtime.refresh_gauges(now)
            except Exception as err:
                log.error("gauges of model %s: %s", runtime.name, err)
            apprenticed = apprentice_model(runtime.learner)
            if apprenticed is not None:
                self._apprentice_gauges(runtime.name, apprenticed)

    def _apprentice_gauges(self, name: str, learner: ApprenticeModel) -> None:
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
