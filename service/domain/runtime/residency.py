"""Which models' objects one process keeps in memory: the least recently used go first.

A model is loaded on first use (a served runtime on its first request, a learner's model
when its log has entries to learn), never at start: ten thousand idle models cost their
records and little else.  With a bound (``BANDITREE_MAX_RESIDENT_MODELS``), each use
marks the model as the most recent, and past the bound the least recently used are
asked to let go of their objects.  Only an idle one does (a served runtime with no
decision of a caller's id in flight; a learner that published everything it learned and
waits for work); a busy one stays and is asked again at the next use of another model.
Letting go loses nothing: the store holds the model's newest checkpoint and its log, and
the next use loads them again.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable

#: how many least recently used models one use asks to let go, at most
_ASKED_PER_USE = 4


class Residency:
    """Models loaded in memory, least recently used first, with a bound (0: none)."""

    def __init__(self, bound: int) -> None:
        self.bound = bound
        self._used: OrderedDict[str, Callable[[], bool]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._used)

    def __contains__(self, name: object) -> bool:
        return name in self._used

    def used(self, name: str) -> None:
        """Loaded ``name`` was used now: the most recent."""
        if self.bound and name in self._used:
            self._used.move_to_end(name)

    def loaded(self, name: str, let_go: Callable[[], bool]) -> None:
        """``name`` was loaded now; ``let_go`` drops its objects when it is idle (True)
        or refuses (False: busy).  Past the bound, the least recently used idle ones are
        let go, at most :data:`_ASKED_PER_USE` asked."""
        if not self.bound:
            return
        used = self._used
        used[name] = let_go
        used.move_to_end(name)
        asked = 0
        while len(used) > self.bound and asked < _ASKED_PER_USE:
            oldest, release = next(iter(used.items()))
            if oldest == name:
                return
            asked += 1
            if release():
                del used[oldest]
            else:  # busy: the most recent now, asked again later
                used.move_to_end(oldest)

    def dropped(self, name: str) -> None:
        """``name`` is no longer loaded (let go, deleted or forgotten)."""
        self._used.pop(name, None)
