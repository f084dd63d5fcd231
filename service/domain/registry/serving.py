"""Serving: restore a model's runtime from its record and newest valid checkpoint."""

from __future__ import annotations

import json
import logging
import time

from banditree.learners import LearnerConfig, build_learner
from banditree.learners.apprentice import ApprenticeModel, apprentice_model
from service.domain.checkpoint_restore import newest_valid_checkpoint
from service.domain.errors import ModelNotFound, Unavailable
from service.domain.registry.base import RegistryBase
from service.domain.runtime import ModelRuntime
from service.domain.runtime.tasks import LoopShare
from service.domain.schemas import ModelPolicy
from service.store import ModelGone

log = logging.getLogger("banditree.service")


class _NotCounted:
    def inc(self, amount: float = 1.0) -> None:
        """Count nothing."""


class ServingRegistry(RegistryBase):
    """Load served models on first use; sweep their decisions; refresh their gauges."""

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
            on_gone=self.want_discovery, on_behind=self.went_back,
            on_initial_snapshot=self.freezer.soon,
        )  # fmt: skip
        await runtime.refresh_bounds()
        self.records[name] = record_json
        return runtime

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
