"""Operator writes on a served model: a checkpoint on demand, a changed copy, a rollback.

Each is saved as the model's newest checkpoint; a replace or a rollback is written with
the operator token (-1), which fences out the learner: it restarts from that checkpoint
and learns again the feedback logged after it.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from banditree.learners import Learner
from banditree.persistence import dumps, loads
from service.domain.errors import NotFound, Unavailable
from service.domain.runtime.policy import Policy
from service.domain.runtime.snapshot import ServedSnapshot
from service.store import CheckpointInfo, Store, StoreUnavailable
from service.store.base import budget_seconds, store_budget

_CHECKPOINT_WAIT_SECONDS = 30.0


class OperatorWrites:
    """The operator writes of :class:`~service.domain.runtime.api.ModelRuntime`."""

    name: str
    store: Store
    served: ServedSnapshot
    log_last: int
    policy: Policy
    wake_learner: Callable[[], None] | None

    async def checkpoint(self) -> CheckpointInfo:
        """Ask the learner for a checkpoint holding every feedback logged so far; wait for it."""
        try:
            last = (await self.store.log_bounds(self.name)).last
            stored = await self.store.list_checkpoints(self.name, limit=1)
            before = stored[0].sequence if stored else 0
            await self.store.request_checkpoint(self.name)
            if self.wake_learner is not None:  # an idle learner of this process looks now
                self.wake_learner()
            deadline = time.monotonic() + _CHECKPOINT_WAIT_SECONDS
            each = budget_seconds()  # waiting for the learner is the point: each look has one
            while time.monotonic() < deadline:
                with store_budget(each):
                    stored = await self.store.list_checkpoints(self.name, limit=1)
                if stored and stored[0].sequence > before and stored[0].offset >= last:
                    await self.served.refresh()
                    return stored[0]
                await asyncio.sleep(0.01)
        except StoreUnavailable as err:
            raise Unavailable(f"checkpoint failed: {err}") from None
        raise Unavailable(
            f"no learner published a checkpoint within {_CHECKPOINT_WAIT_SECONDS:.0f} s; "
            "is a process with role learner or all running?",
        )

    async def replace(self, change: Callable[[Learner], None]) -> CheckpointInfo:
        """Make a changed copy of the served model the newest checkpoint (an operator write).

        The checkpoint keeps the served snapshot's log offset: the learner, fenced out by
        the operator token, restarts from it and learns again every feedback logged
        after it, so nothing acknowledged is lost.  Used to switch an apprentice's mode.
        """
        served = self.served

        def changed_copy() -> tuple[int, bytes]:  # the served learner itself stays as it is
            copy = loads(dumps(served.learner))
            change(copy)
            return copy.version, dumps(copy)

        try:
            version, blob = await asyncio.to_thread(changed_copy)
            saved = await self.store.save_checkpoint(
                self.name, version=version, blob=blob, keep=self.policy.checkpoint_keep,
                now=time.time(), offset=served.offset, acked_at=0.0, token=-1,
            )  # fmt: skip
            await served.refresh()
        except StoreUnavailable as err:
            raise Unavailable(f"the change was not saved: {err}") from None
        if self.wake_learner is not None:
            self.wake_learner()
        return saved

    async def rollback(self, version: int) -> CheckpointInfo:
        """Serve the newest valid checkpoint of ``version`` again (saved as the newest).

        Feedback logged before the rollback and not in that checkpoint is discarded;
        the learner is fenced out, restarts from the rolled-back checkpoint and
        learns from the feedback logged after it.
        """
        try:
            found = await self.served.find_version(version)
            if found is None:
                versions = sorted({i.version for i in await self.store.list_checkpoints(self.name)})
                raise NotFound(
                    f"no valid checkpoint of version {version}; stored versions: {versions}",
                    "version",
                )  # fmt: skip
            blob, info = found
            last = (await self.store.log_bounds(self.name)).last
            saved = await self.store.save_checkpoint(
                self.name, version=info.version, blob=blob, keep=self.policy.checkpoint_keep,
                now=time.time(), offset=max(last, self.log_last), acked_at=0.0, token=-1,
            )  # fmt: skip
            await self.served.refresh()
        except StoreUnavailable as err:
            raise Unavailable(f"rollback failed: {err}") from None
        if self.wake_learner is not None:
            self.wake_learner()
        return saved
