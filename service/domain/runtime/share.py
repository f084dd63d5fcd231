"""Learners spread over processes: each process leads at most its fair share of models.

The rule: with ``M`` models and ``L`` live learner processes, a process takes leases up
to ``ceil(M / L)`` models, and no more (``M`` as the store counts them, so every process
has the same share; one that knows fewer models looks for the others at once).  Every process announces itself every third of
the lease's length (a heartbeat that lapses after one lease length,
:meth:`~service.store.protocols.LeaseStore.announce_learner`), so each one knows ``L``.

- **join**: ``L`` grows, the share shrinks; a process over its share hands leases back
  (the excess learners publish what they learned, release the lease and stay away for
  one lease length), and the newcomer, under its share, takes them.
- **death**: the dead process's heartbeat lapses within one lease length, as its leases
  do; ``L`` shrinks, the share grows, and the others take the lapsed leases.
- **stop**: a process that stops withdraws at once and gives its leases back.

Between two heartbeats the count can be off by the processes that came or went; the
sum of the shares is never below ``M`` once the heartbeats agree.
"""

from __future__ import annotations

import asyncio
import contextvars
import logging
import math
import time
from collections.abc import Callable

from prometheus_client import Counter, Gauge

from service.store import Store, StoreUnavailable

log = logging.getLogger("banditree.service")


class LeaseShare:
    """This process's share of the models' leases, and its heartbeat."""

    def __init__(
        self,
        store: Store,
        *,
        holder: str,
        lease_seconds: float,
        models: Callable[[], int],
        hand_over: Callable[[int], None],
        discover: Callable[[], None] | None = None,
        led_gauge: Gauge | None = None,
        share_gauge: Gauge | None = None,
        applied: Counter | None = None,
    ) -> None:
        self.store, self.holder, self.lease_seconds = store, holder, lease_seconds
        self._models = models  # how many models this process could learn
        self._hand_over = hand_over  # wake n leading learners to hand their lease back
        self._discover = discover  # the store holds models this process does not know
        self.stored = 0  # models the store holds, as the last heartbeat counted them
        # learners that found no room, by model: woken (first come, first woken) as
        # room appears, so that a free lease is tried at once, not at the next retry
        self._waiting: dict[str, Callable[[], None]] = {}
        self.live = 1  # learner processes alive, this one included
        self.led = 0  # leases held, or being taken
        self.leaving = 0  # of those, handed back and not yet released
        self._led_gauge, self._share_gauge, self.applied = led_gauge, share_gauge, applied
        self._task: asyncio.Task[None] | None = None

    @property
    def share(self) -> int:
        """``ceil(models / live learner processes)``: the most this process leads."""
        return math.ceil(max(self._models(), self.stored) / max(1, self.live))

    def take(self, name: str = "", wake: Callable[[], None] | None = None) -> bool:
        """Reserve one lease to try for; False when this process leads (or is trying for)
        its share already: then ``wake`` is called once there is room again."""
        if self.led >= self.share:
            if wake is not None:
                self._waiting[name] = wake
            return False
        self._waiting.pop(name, None)
        self.led += 1
        self._show()
        return True

    def give_back(self, *, leaving: bool = False) -> None:
        """A reserved lease was not had, or is no longer led (``leaving``: handed back)."""
        self.led -= 1
        if leaving:
            self.leaving -= 1
        self._show()
        self._wake_waiting()

    def _wake_waiting(self) -> None:
        room = self.share - self.led
        while room > 0 and self._waiting:
            name = next(iter(self._waiting))
            self._waiting.pop(name)()
            room -= 1

    def should_leave(self) -> bool:
        """Whether the calling learner is to hand its lease back (this process is over its
        share, counting those already leaving); it is then counted as leaving."""
        if self.led - self.leaving <= self.share:
            return False
        self.leaving += 1
        return True

    def _show(self) -> None:
        if self._led_gauge is not None:
            self._led_gauge.set(self.led)

    def start(self) -> None:
        """Start the heartbeat (in a context of its own: no request's store budget)."""
        if self._task is None:
            self._task = asyncio.create_task(
                self._beat(), name="learner-heartbeat", context=contextvars.Context()
            )

    async def stop(self) -> None:
        """Stop the heartbeat and withdraw (after the learners stopped)."""
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
            self._task = None
        try:
            await self.store.withdraw_learner(self.holder)
        except StoreUnavailable as err:
            log.warning("learner %s could not withdraw: %s", self.holder, err)

    async def beat(self) -> None:
        """Announce this process; learn how many are alive; hand back any excess."""
        self.live, self.stored = await self.store.announce_learner(
            self.holder, ttl_seconds=self.lease_seconds, now=time.time()
        )
        if self.stored > self._models() and self._discover is not None:
            self._discover()
        self._wake_waiting()  # a process left: try for its leases now, not at the next retry
        if self._share_gauge is not None:
            self._share_gauge.set(self.share)
        excess = self.led - self.leaving - self.share
        if excess > 0:
            self._hand_over(excess)

    async def _beat(self) -> None:
        while True:
            try:
                await self.beat()
            except StoreUnavailable as err:
                log.warning("learner heartbeat: %s", err)
            except Exception:  # the heartbeat must outlive any one failure
                log.exception("learner heartbeat failed; going on")
            await asyncio.sleep(self.lease_seconds / 3)
