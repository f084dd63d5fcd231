"""Creating and deleting models."""

from __future__ import annotations

import asyncio
import functools
import json
import time
import uuid
from typing import Any

from banditree.learners import Learner, LearnerConfig, build_learner
from banditree.learners.validation import InvalidInput, check_loss
from banditree.models.dgt.trained import InvalidModelFile, TrainedTree
from banditree.persistence import dumps
from service.domain.errors import (
    CapacityReached,
    InvalidRequest,
    ModelExists,
    ModelNotFound,
    Unavailable,
)
from service.domain.registry.learning import LearningRegistry
from service.domain.runtime import ModelRuntime
from service.domain.schemas import ModelCreate, ModelPolicy
from service.store import NameTaken, StoreUnavailable, TooManyModels


def _build(config: LearnerConfig, initial_model: TrainedTree | None) -> Learner:
    """A fresh learner, warm-started from a ``banditree train`` tree when given."""
    if initial_model is None:
        return build_learner(config)
    return build_learner(config, initial_model=initial_model)


def _initial_model(body: ModelCreate) -> TrainedTree | None:
    """The body's base64 ``initial_model``, read (422 naming it when it is not a model file)."""
    if body.initial_model is None:
        return None
    try:
        return TrainedTree.from_base64(body.initial_model)
    except InvalidModelFile as err:
        raise InvalidRequest(f"initial_model: {err}", "initial_model") from None


class ModelRegistry(LearningRegistry):
    """The models one process serves and learns: create, restore, discover, delete."""

    async def create(self, name: str, body: ModelCreate) -> ModelRuntime:
        """A new model; 409 when the name is taken or ``max_models`` are served already.

        The cap counts the creates in flight too: the check and the reservation run
        with no ``await`` between them, so creates of other names racing for the last
        places (each under its own name's lock) cannot all pass it.  The store checks it
        again as it writes the record (one atomic step), for creates in other processes.
        """
        config, policy = body.split()
        initial = _initial_model(body)
        if initial is not None:  # recorded as built, so its checkpoints match it
            config = config.for_initial_model(initial.features)
        async with self._locked(name):
            self.touch(name)  # a discovery pass that read the list before leaves it alone
            await self._name_free(name)
            limit = self.settings.max_models
            if len(self.records) + self._creating >= limit:
                await self._forget_deleted_elsewhere()
            held = len(self.records) + self._creating
            if held >= limit:
                raise CapacityReached(held, limit)
            self._creating += 1
            try:
                return await self._create(name, body, config, policy, initial)
            finally:
                self._creating -= 1

    async def _name_free(self, name: str) -> None:
        """Raise :class:`ModelExists` unless ``name`` is free in the store.

        The store decides, not this process's runtimes: a model deleted through another
        process is served here until discovery sees the delete, and a create of its name
        in that window must not be refused.  Such a runtime is forgotten first.  When the
        store lost its data (a new epoch), the models held here are being written back,
        so a name held here stays taken.  The caller holds the name's lock.
        """
        if await self.store.load_model(name) is not None:
            raise ModelExists(name)
        if name in self.runtimes or name in self.learners or name in self.records:
            if await self.store.epoch() != self.epoch:
                raise ModelExists(name)
            await self._forget(name)  # deleted elsewhere

    async def _forget_deleted_elsewhere(self) -> None:
        """Forget the runtimes of models another process deleted, before a create is
        refused at the cap: this process serves them until its discovery sees the deletes,
        and they must not take places the store has free.  Discovery's own drop
        (:meth:`_drop`: what this process made or loaded after the list was read stays);
        names whose lock is held (a create, load or delete under way) are left to it, and
        after the store lost its data the models held here are being written back."""
        generation = self.generation
        records = await self.store.load_models()
        if await self.store.epoch() != self.epoch:
            return
        for gone in [n for n in self.records if n not in records]:
            lock = self._locks.get(gone)
            if lock is None or not lock.locked():
                await self._drop(gone, generation)

    async def _create(
        self,
        name: str,
        body: ModelCreate,
        config: LearnerConfig,
        policy: ModelPolicy,
        initial: TrainedTree | None,
    ) -> ModelRuntime:
        """:meth:`create` once the name is free and a place under the cap is reserved."""
        try:
            learner = _build(config, initial)
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
        changes = await self._write_new(name, record["uid"], record_json, learner, body)
        self.saw_store_changes(changes)
        runtime = ModelRuntime(
            name=name, uid=record["uid"], learner=learner, policy=resolved,
            store=self.store, metrics=self.metrics.for_model(name),
            wake_learner=self._waker(name), on_gone=functools.partial(self.gone, name, record["uid"]),
            on_behind=self.went_back, on_initial_snapshot=self.freezer.soon,
        )  # fmt: skip
        self.records[name] = record_json
        self._publish(runtime)
        if self.learns:
            self._start_learner(name, record_json)
        return runtime

    async def _write_new(
        self, name: str, token: str, record_json: str, learner: Learner, body: ModelCreate
    ) -> int:
        """Hold the model, save its warm start, then its record, claimed by ``token``: the
        count of store changes.  The store refuses the record when the name has one
        (409) or holds ``max_models`` (409 naming the cap), checked with the write, for
        creates in every process.  A create refused at the cap deletes the keys it wrote,
        unless a create of the same name elsewhere is under way or recorded (one step
        in the store): they are that model's."""
        await self.store.begin_create(name, token, now=time.time())
        await self.store.hold_model(name)
        if body.initial_model is not None:
            await self._save_initial(name, learner)
        try:
            changes = await self.store.save_model(
                name, record_json, max_models=self.settings.max_models
            )
        except NameTaken:
            await self.store.end_create(name, token, recorded=True, now=time.time())
            raise ModelExists(name) from None
        except TooManyModels as err:
            await self.store.end_create(name, token, recorded=False, now=time.time())
            raise CapacityReached(err.held, err.limit) from None
        await self.store.end_create(name, token, recorded=True, now=time.time())
        return changes

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
            self.touch(name)
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
                self.saw_store_changes(await self.store.delete_model(name))
            except StoreUnavailable:
                if learner is not None:
                    self._start_learner(name, record)
                raise
            self.runtimes.pop(name, None)
            self.records.pop(name, None)
            self._views.pop(name, None)
            self.resident.dropped(name)
            self.resident_learners.dropped(name)
            self.metrics.forget_model(name)
            self.metrics.models_loaded.set(len(self.runtimes))
            self.touch(name)
