"""The most recent learned rounds of a boosted model: a ring of (context, action, reward)."""

from __future__ import annotations

from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray, IntArray
from banditree.core.records import Feedback

#: tensor names of :meth:`RoundWindow.tensors` (learned state: ``param.`` like parameters)
TENSORS = ("param.window_contexts", "param.window_actions", "param.window_rewards")


class RoundWindow:
    """At most ``capacity`` rounds; the oldest is overwritten first.

    Parameters
    ----------
    capacity
        The most rounds held.
    n_features
        Width ``d`` of a context.
    """

    def __init__(self, capacity: int, n_features: int) -> None:
        self.capacity = capacity
        self._contexts = np.zeros((0, n_features))
        self._actions = np.zeros(0, dtype=np.int64)
        self._rewards = np.zeros(0)
        self._size = 0
        self._head = 0  # the next slot written

    def __len__(self) -> int:
        return self._size

    def append(self, context: FloatArray, action: int, reward: float) -> None:
        """Hold one round (storage grows by doubling up to ``capacity``)."""
        if self._size < self.capacity and self._size == self._contexts.shape[0]:
            grown = min(self.capacity, max(64, 2 * self._size))
            self._contexts = _grow(self._contexts, grown)
            self._actions = _grow(self._actions, grown)
            self._rewards = _grow(self._rewards, grown)
        slot = self._head
        self._contexts[slot] = context
        self._actions[slot] = action
        self._rewards[slot] = reward
        self._head = (slot + 1) % self.capacity
        self._size = min(self._size + 1, self.capacity)

    def extend(self, contexts: FloatArray, actions: IntArray, rewards: FloatArray) -> None:
        """:meth:`append` of each round of ``contexts`` ``(B, d)``, ``actions`` and
        ``rewards`` ``(B,)`` in order, by slices: the same rounds held."""
        m = len(actions)
        wanted = min(self.capacity, self._size + m)
        while self._contexts.shape[0] < wanted:  # append's doublings
            grown = min(self.capacity, max(64, 2 * self._contexts.shape[0]))
            self._contexts = _grow(self._contexts, grown)
            self._actions = _grow(self._actions, grown)
            self._rewards = _grow(self._rewards, grown)
        done = 0
        while done < m:
            slot = self._head
            take = min(m - done, self.capacity - slot)
            self._contexts[slot : slot + take] = contexts[done : done + take]
            self._actions[slot : slot + take] = actions[done : done + take]
            self._rewards[slot : slot + take] = rewards[done : done + take]
            self._head = (slot + take) % self.capacity
            self._size = min(self._size + take, self.capacity)
            done += take

    def rows(self) -> tuple[FloatArray, IntArray, FloatArray]:
        """Contexts ``(n, d)``, actions ``(n,)``, rewards ``(n,)``, oldest first."""
        n = self._size
        if n < self.capacity:
            return self._contexts[:n], self._actions[:n], self._rewards[:n]
        order = np.roll(np.arange(n), -self._head)
        return self._contexts[order], self._actions[order], self._rewards[order]

    def tensors(self) -> dict[str, np.ndarray]:
        """The held rounds, oldest first (:meth:`load` restores them)."""
        contexts, actions, rewards = self.rows()
        return dict(zip(TENSORS, (contexts.copy(), actions.copy(), rewards.copy()), strict=True))

    def load(self, tensors: dict[str, np.ndarray]) -> None:
        """Hold the rounds of :meth:`tensors` (oldest first)."""
        contexts, actions, rewards = (np.asarray(tensors[name]) for name in TENSORS)
        n = int(actions.shape[0])
        if contexts.shape != (n, self._contexts.shape[1]) or rewards.shape != (n,):
            raise ValueError("window tensors disagree in shape")
        if n > self.capacity:
            raise ValueError(f"window holds {n} rounds, more than its capacity {self.capacity}")
        self._contexts = np.array(contexts, dtype=np.float64)
        self._actions = np.array(actions, dtype=np.int64)
        self._rewards = np.array(rewards, dtype=np.float64)
        self._size = n
        self._head = n % self.capacity


def _grow(array: np.ndarray, rows: int) -> np.ndarray:
    out = np.zeros((rows, *array.shape[1:]), dtype=array.dtype)
    out[: array.shape[0]] = array
    return out


def feedback_rewards(feedback: Feedback, n_actions: int, loss_matrix: Any = None) -> FloatArray:
    """Every action's reward ``(K,)`` a checked feedback tells.

    A loss tells the played action's alone (every entry holds it; read the played one);
    a label (full information) tells all: ``1 - loss_matrix[label]``, the 0/1 loss when
    the config has no matrix.
    """
    if feedback.label is None:
        assert feedback.loss is not None
        return np.full(n_actions, 1.0 - float(feedback.loss))
    label = int(feedback.label)
    if loss_matrix is not None:
        out: FloatArray = 1.0 - np.asarray(loss_matrix[label], dtype=np.float64)
        return out
    rewards = np.zeros(n_actions)
    rewards[label] = 1.0
    return rewards
