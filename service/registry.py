"""The models one process serves: create, restore at start, load on first use, delete."""

from __future__ import annotations

import asyncio
import json
import logging
import time
import uuid
from typing import Any

from banditree.learners import Learner, LearnerConfig, build_learner
from banditree.learners.validation import InvalidInput, check_loss
from banditree.supervised.model_file import InvalidModelFile, TrainedTree
from service.checkpoint_restore import newest_valid_checkpoint
from service.errors import ServiceError, model_not_found
from service.metrics import ServiceMetrics
from service.runtime import ModelRuntime, Policy
from service.schemas import ModelCreate, ModelPolicy
from service.settings import Settings
from service.store import Store

log = logging.getLogger("banditree.service")


def _build(config: LearnerConfig, initial_model: str | None) -> Learner:
    """A fresh learner, warm-started from a base64 ``banditree train`` file when given."""
    if initial_model is None:
        return build_learner(config)
    return build_learner(config, initial_model=TrainedTree.from_base64(initial_model))


class ModelRegistry:
    """Named :class:`ModelRuntime` objects backed by a :class:`Store`.

    Model records (config + policy) live in the store, so models come back after a
    restart and a second server on the same Redis loads a model on first use.
    """

    def __init__(self, *, store: Store, settings: Settings, metrics: ServiceMetrics) -> None:
        self.store, self.settings, self.metrics = store, settings, metrics
        self.runtimes: dict[str, ModelRuntime] = {}
        self._lock = asyncio.Lock()

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

    def _publish(self, runtime: ModelRuntime) -> None:
        self.runtimes[runtime.name] = runtime
        runtime.start()
        self.metrics.models_loaded.set(len(self.runtimes))

    # -- restore ---------------------------------------------------------------------
    async def _restore(self, name: str, record_json: str) -> ModelRuntime:
        record = json.loads(record_json)
        config = LearnerConfig.model_validate(record["config"])
        uid, policy = record["uid"], self._policy(ModelPolicy.model_validate(record["policy"]))
        metrics = self.metrics.for_model(name)
        found = await newest_valid_checkpoint(
            self.store, name, await self.store.list_checkpoints(name),
            expected_config=config.model_dump(mode="json"),
            corrupt_total=metrics.checkpoint_corrupt,
        )  # fmt: skip
        learner, info = found if found is not None else (build_learner(config), None)
        log.info("model %s restored at version %d", name, learner.version)
        return ModelRuntime(
            name=name,
            uid=uid,
            learner=learner,
            policy=policy,
            store=self.store,
            metrics=metrics,
            last_checkpoint=info,
        )

    async def restore_all(self) -> None:
        """Restore every stored model from its newest valid checkpoint."""
        for name, record in (await self.store.load_models()).items():
            try:
                self._publish(await self._restore(name, record))
            except (KeyError, TypeError, ValueError) as err:
                log.error("model %s could not be restored: %s", name, err)

    async def get(self, name: str) -> ModelRuntime:
        """The runtime of ``name``; loads it from the store when another process created it."""
        runtime = self.runtimes.get(name)
        if runtime is not None:
            return runtime
        async with self._lock:
            if name in self.runtimes:
                return self.runtimes[name]
            record = await self.store.load_model(name)
            if record is None:
                raise model_not_found(name)
            runtime = await self._restore(name, record)
            self._publish(runtime)
            return runtime

    # -- create / delete -------------------------------------------------------------
    async def create(self, name: str, body: ModelCreate) -> ModelRuntime:
        """A new model; 409 when the name is taken."""
        config, policy = body.split()
        async with self._lock:
            if name in self.runtimes or await self.store.load_model(name) is not None:
                raise ServiceError(409, f"model {name!r} exists; DELETE it first", "name")
            try:
                learner = _build(config, body.initial_model)
            except InvalidModelFile as err:
                raise ServiceError(422, f"initial_model: {err}", "initial_model") from None
            except ValueError as err:
                raise ServiceError(422, str(err), "kind") from None
            resolved = self._policy(policy)
            if resolved.default_loss is not None:
                try:
                    check_loss(resolved.default_loss, getattr(learner, "loss_bounds", None))
                except InvalidInput as err:
                    raise ServiceError(422, f"default_loss: {err}", "default_loss") from None
            record: dict[str, Any] = {
                "uid": uuid.uuid4().hex,
                "config": config.model_dump(mode="json"),
                "policy": policy.model_dump(mode="json"),
                "created_at": time.time(),
            }
            await self.store.save_model(name, json.dumps(record, sort_keys=True))
            runtime = ModelRuntime(
                name=name, uid=record["uid"], learner=learner, policy=resolved,
                store=self.store, metrics=self.metrics.for_model(name),
            )  # fmt: skip
            self._publish(runtime)
            if body.initial_model is not None:
                await runtime.checkpoint()  # a restart resumes from the warm start
            return runtime

    async def delete(self, name: str) -> None:
        """Stop and forget ``name`` with its checkpoints."""
        runtime = await self.get(name)
        async with self._lock:
            self.runtimes.pop(name, None)
            await runtime.stop(checkpoint=False)
            await self.store.delete_model(name)
            self.metrics.forget_model(name)
            self.metrics.models_loaded.set(len(self.runtimes))

    async def close(self) -> None:
        """Apply all accepted feedback and checkpoint every changed model (graceful stop)."""
        for runtime in list(self.runtimes.values()):
            await runtime.stop(checkpoint=True)

    async def sweep(self) -> None:
        """Expire overdue events and run timed checkpoints for every model."""
        now = time.time()
        for i, runtime in enumerate(list(self.runtimes.values())):
            if i % 50 == 49:
                await asyncio.sleep(0)  # thousands of models: let requests run between them
            try:
                await runtime.sweep(now)
            except Exception as err:  # a store hiccup must not stop the maintenance loop
                log.error("maintenance of model %s failed: %s", runtime.name, err)

    async def refresh_gauges(self) -> None:
        """Pending events and checkpoint ages of every model, for a scrape."""
        now = time.time()
        for runtime in list(self.runtimes.values()):
            try:
                await runtime.refresh_gauges(now)
            except Exception as err:
                log.error("gauges of model %s: %s", runtime.name, err)
