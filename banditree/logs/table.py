"""A log in columns: what evaluation and replay read."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray

#: ``action`` / ``greedy_action`` of a row that has none (regression)
NO_ACTION = -1


@dataclass(frozen=True)
class LogTable:
    """Joined log rows in offset order, as arrays.

    Shapes: ``context`` ``(n, d)``; every other array ``(n,)``.  ``action`` and
    ``greedy_action`` are :data:`NO_ACTION` where absent; ``loss`` is NaN for a
    two-point row (its two losses are ``loss_plus`` / ``loss_minus``).  A log of a model
    with named features has its JSON contexts in ``objects`` (``(n,)`` of dicts) and a
    ``context`` of no columns ``(n, 0)``.
    """

    name: str
    offset: np.ndarray
    event_id: np.ndarray
    time_seconds: FloatArray
    model_version: np.ndarray
    context: FloatArray
    action: np.ndarray
    propensity: FloatArray
    greedy_action: np.ndarray
    loss: FloatArray
    objects: np.ndarray | None = None

    @property
    def named(self) -> bool:
        """Whether the contexts are JSON objects of named features (``objects``)."""
        return self.objects is not None

    def context_at(self, t: int) -> Any:
        """Row ``t``'s context as a learner takes it: its JSON object, or its numbers."""
        return self.objects[t] if self.objects is not None else self.context[t]

    @property
    def n_rows(self) -> int:
        return int(self.offset.shape[0])

    @property
    def n_features(self) -> int:
        return int(self.context.shape[1])

    @property
    def task(self) -> str:
        """``classification`` when every row played an action, else ``regression``."""
        return "classification" if bool(np.all(self.action >= 0)) else "regression"

    @property
    def n_actions(self) -> int:
        """Largest logged action (or greedy action) + 1."""
        top = max(int(self.action.max(initial=-1)), int(self.greedy_action.max(initial=-1)))
        return top + 1

    def reward(self) -> FloatArray:
        """Classification reward ``1 - loss``."""
        out: FloatArray = 1.0 - self.loss
        return out

    def rows(self, index: np.ndarray) -> LogTable:
        """The rows at ``index`` (a slice or index array)."""
        return LogTable(
            name=self.name,
            **{
                k: getattr(self, k)[index]
                for k in (
                    "offset",
                    "event_id",
                    "time_seconds",
                    "model_version",
                    "context",
                    "action",
                    "propensity",
                    "greedy_action",
                    "loss",
                )
            },
            objects=None if self.objects is None else self.objects[index],
        )

    def check(self) -> LogTable:
        """Validate the arrays; errors name the column and the bound."""
        n = self.n_rows
        if n == 0:
            raise ValueError(f"{self.name}: the log has no rows")
        for key in ("event_id", "time_seconds", "model_version", "action", "propensity", "loss"):
            if getattr(self, key).shape != (n,):
                raise ValueError(f"{self.name}: column {key} has the wrong length")
        if self.context.ndim != 2 or self.context.shape[0] != n:
            raise ValueError(f"{self.name}: context must have one row per log row")
        if not np.isfinite(self.context).all():
            raise ValueError(f"{self.name}: context columns x0.. must be finite numbers")
        p = self.propensity
        if not (np.all(p > 0) and np.all(p <= 1)):
            bad = int(np.flatnonzero(~((p > 0) & (p <= 1)))[0])
            raise ValueError(
                f"{self.name}: propensity must be in (0, 1], got {p[bad]} at row {bad}"
            )
        if self.task == "classification" and not np.isfinite(self.loss).all():
            raise ValueError(f"{self.name}: every classification row needs a finite loss")
        return self


def table_from_columns(name: str, columns: dict[str, Any], n: int) -> LogTable:
    """A :class:`LogTable` from named columns; absent ones get their defaults."""

    def column(key: str, default: float, dtype: Any) -> np.ndarray:
        values = columns.get(key)
        if values is None:
            return np.full(n, default, dtype=dtype)
        arr = np.asarray(values, dtype=np.float64) if dtype is not object else None
        if arr is None:
            return np.asarray(values, dtype=object)
        if dtype is np.int64:
            return np.where(np.isnan(arr), default, arr).astype(np.int64)
        return arr

    features = sorted((int(k[1:]), k) for k in columns if k.startswith("x") and k[1:].isdigit())
    objects = None
    if "context" in columns and n and isinstance(columns["context"][0], dict):
        objects = np.empty(n, dtype=object)
        objects[:] = list(columns["context"])
        context = np.zeros((n, 0))
    elif "context" in columns:
        context = np.asarray(columns["context"], dtype=np.float64).reshape(n, -1)
    elif features:
        context = np.column_stack([np.asarray(columns[k], dtype=np.float64) for _, k in features])
    else:
        raise ValueError(f"{name}: no context (a 'context' field or columns x0, x1, ...)")
    loss = columns.get("loss")
    if loss is None and "reward" in columns:
        loss_arr = 1.0 - np.asarray(columns["reward"], dtype=np.float64)
    else:
        loss_arr = column("loss", np.nan, np.float64)
    offsets = columns.get("offset", columns.get("round"))
    return LogTable(
        name=name,
        offset=np.arange(n, dtype=np.int64)
        if offsets is None
        else np.asarray(offsets, dtype=np.int64),
        event_id=column("event_id", 0, object)
        if "event_id" in columns
        else np.array([str(i) for i in range(n)], dtype=object),
        time_seconds=column("time_seconds", np.nan, np.float64),
        model_version=column("model_version", 0, np.int64),
        context=context,
        action=column("action", NO_ACTION, np.int64),
        propensity=column("propensity", 1.0, np.float64),
        greedy_action=column("greedy_action", NO_ACTION, np.int64),
        loss=loss_arr,
        objects=objects,
    )
