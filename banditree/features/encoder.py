"""Contexts of named features -> the fixed-width float vector a tree reads.

Columns, feature by feature in schema order:

* numeric / boolean: the value (boolean 1 / 0), then (``missing``) an indicator;
  a missing number is imputed with the running mean of the values learned so far;
* categorical / tags: one column per vocabulary slot, an "other" column (values with
  no slot: beyond the bound, not yet admitted, or not seen at learn time), then
  (``missing``) an indicator.  Tags set every matching column (multi-hot).

Why a bounded vocabulary and not hashing, for a hard oblique tree: a split is a
linear function of the columns, so a column shared by two categories (a hash
collision) can never be split apart, and a readable split (``[country = DE]``) needs a
column that means one category.  The vocabulary is append-only: once a category has a
column it keeps it (a learned weight never changes meaning), and a category is
admitted at its ``min_count``-th sighting while slots remain, so the first frequent
values take the slots and the rare tail shares "other".  Slots are reserved up front
(``max_categories`` per feature), so the tree's input width never changes.

The encoder is learner state: :meth:`FeatureEncoder.update` (vocabulary and numeric
means) is called by the learner only, at learn time, in log order; decisions read the
view frozen at the last :meth:`FeatureEncoder.publish` (the learner publishes with
each model update), so every replica restored from the same snapshot, and every
replay of the same log, encodes a context the same way.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

import numpy as np

from banditree.features.errors import InvalidInput
from banditree.features.schema import (
    MAX_STRING_LENGTH,
    MAX_TAGS,
    FeatureSchema,
    FeatureSpec,
    flatten_context,
)

_TRUE = {"true", "yes", "1", "t", "y"}
_FALSE = {"false", "no", "0", "f", "n"}
#: candidate categories counted per feature before admission (bounded memory)
CANDIDATE_FACTOR = 4
#: what decisions are shown of an encoder: its numeric means and each vocabulary's size
EncoderView = tuple[np.ndarray, tuple[int, ...]]


def _is_missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def category_key(value: Any, field: str) -> str:
    """The vocabulary key of one category value (``3``, ``3.0`` and ``"3"`` are one key)."""
    if isinstance(value, str):
        if len(value) > MAX_STRING_LENGTH:
            raise InvalidInput(field, f"must be at most {MAX_STRING_LENGTH} characters")
        return value
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise InvalidInput(field, f"must be a category, got {value}")
        return str(int(value)) if value.is_integer() else repr(value)
    raise InvalidInput(field, f"must be a category (string or integer code), got {_kind(value)}")


def _kind(value: Any) -> str:
    if isinstance(value, Mapping):
        return "an object"
    return "a list" if isinstance(value, list | tuple) else type(value).__name__


def _number(value: Any, spec: FeatureSpec, field: str) -> float:
    if spec.type == "boolean":
        if isinstance(value, bool):
            return 1.0 if value else 0.0
        if isinstance(value, int | float) and value in (0, 1):
            return float(value)
        if isinstance(value, str) and value.strip().lower() in _TRUE | _FALSE:
            return 1.0 if value.strip().lower() in _TRUE else 0.0
        raise InvalidInput(field, f"must be a boolean, got {value!r:.40}")
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if not isinstance(value, int | float):
        raise InvalidInput(field, f"must be a number, got {_kind(value)} {value!r:.40}")
    x = float(value)
    if not math.isfinite(x):
        raise InvalidInput(field, f"must be finite, got {value}")
    return x


class _Vocabulary:
    """One categorical feature's append-only bounded vocabulary."""

    def __init__(self, spec: FeatureSpec, min_count: int) -> None:
        self.bound = spec.slots
        self.fixed = spec.values is not None
        self.slots: dict[str, int] = {v: i for i, v in enumerate(spec.values or [])}
        self.counts: dict[str, int] = {}
        self.min_count = min_count
        self.visible = len(self.slots)  # slots decisions may read (set by publish)

    def observe(self, key: str) -> None:
        if self.fixed or key in self.slots or len(self.slots) >= self.bound:
            return
        count = self.counts.get(key, 0) + 1
        if count >= self.min_count:
            self.slots[key] = len(self.slots)
            self.counts.pop(key, None)
        elif key in self.counts or len(self.counts) < CANDIDATE_FACTOR * self.bound:
            self.counts[key] = count

    def column(self, key: str, served: bool) -> int:
        """The slot of ``key``, or -1 for "other"."""
        slot = self.slots.get(key, -1)
        return slot if not served or slot < self.visible else -1


class FeatureEncoder:
    """A :class:`FeatureSchema`'s encoder; its vocabularies and means are learner state."""

    def __init__(self, schema: FeatureSchema) -> None:
        self.schema = schema
        self.width = schema.width
        self._offsets: dict[str, int] = {}
        self._vocab: dict[str, _Vocabulary] = {}
        self._numeric: dict[str, int] = {}  # name -> index into the mean arrays
        offset = 0
        for name, spec in schema.features.items():
            self._offsets[name] = offset
            offset += spec.width
            if spec.type in ("categorical", "tags"):
                self._vocab[name] = _Vocabulary(spec, schema.min_count)
            else:
                self._numeric[name] = len(self._numeric)
        #: per feature, in order: (name, 1 numeric / 2 boolean / 0 category, first column,
        #: missing column, mean index or vocabulary, "other" column)
        self._plan: list[tuple[str, int, int, bool, Any, int]] = []
        for name, spec in schema.features.items():
            at = self._offsets[name]
            if spec.type in ("numeric", "boolean"):
                code = 1 if spec.type == "numeric" else 2
                self._plan.append((name, code, at, spec.missing, self._numeric[name], -1))
            else:
                vocab = self._vocab[name]
                self._plan.append((name, 0, at, spec.missing, vocab, at + spec.slots))
        self.count = np.zeros(len(self._numeric))
        self.mean = np.zeros(len(self._numeric))
        self.served_mean = self.mean.copy()

    # -- encoding ----------------------------------------------------------------------
    def flat(self, context: Mapping[str, Any], field: str = "context") -> Mapping[str, Any]:
        """``context`` flattened (:func:`flatten_context`); refuses a non-object."""
        if not isinstance(context, Mapping):
            raise InvalidInput(field, f"must be an object of named features, got {_kind(context)}")
        return flatten_context(context, field)

    def encode(
        self, context: Mapping[str, Any], served: bool = True, field: str = "context"
    ) -> np.ndarray:
        """The ``(width,)`` vector of one context (``served``: the published view)."""
        return self.encode_flat(self.flat(context, field), served, field)

    def encode_flat(
        self,
        flat: Mapping[str, Any],
        served: bool = True,
        field: str = "context",
        out: np.ndarray | None = None,
    ) -> np.ndarray:
        """:meth:`encode` of a context already flattened (:meth:`flat`), into ``out``
        (zeros of shape ``(width,)``) when given."""
        out = np.zeros(self.width) if out is None else out
        means = self.served_mean if served else self.mean
        get = flat.get
        for name, numeric, at, missing, aux, other in self._plan:
            value = get(name)
            kind = type(value)
            if numeric:
                if value is None or value != value:  # missing (None, NaN)
                    out[at] = means[aux]
                    if missing:
                        out[at + 1] = 1.0
                elif (kind is float or kind is int) and numeric == 1 and not value - value:
                    out[at] = value  # a finite number: the common case
                else:
                    out[at] = _number(value, self.schema.features[name], f"{field}.{name}")
                continue
            if value is None or value != value:
                if missing:
                    out[other + 1] = 1.0
            elif kind is str and len(value) <= MAX_STRING_LENGTH:
                slot = aux.slots.get(value, -1)
                out[other if slot < 0 or (served and slot >= aux.visible) else at + slot] = 1.0
            else:
                spec = self.schema.features[name]
                for key in self._keys(value, spec, f"{field}.{name}"):
                    slot = aux.column(key, served)
                    out[other if slot < 0 else at + slot] = 1.0
        return out

    def encode_many(
        self, contexts: list[Mapping[str, Any]], served: bool = True, field: str = "contexts"
    ) -> np.ndarray:
        """``(B, width)`` for a batch (every context checked before any is used)."""
        out = np.zeros((len(contexts), self.width))
        for i, context in enumerate(contexts):
            out[i] = self.encode(context, served, f"{field}[{i}]")
        return out

    @staticmethod
    def _keys(value: Any, spec: FeatureSpec, field: str) -> list[str]:
        if spec.type == "tags" and isinstance(value, list | tuple):
            if len(value) > MAX_TAGS:
                raise InvalidInput(field, f"must hold at most {MAX_TAGS} tags")
            return [category_key(v, f"{field}[{i}]") for i, v in enumerate(value)]
        return [category_key(value, field)]

    # -- learning ----------------------------------------------------------------------
    def update(self, context: Mapping[str, Any], field: str = "context") -> None:
        """Learn from one context (learn time, log order): vocabularies and numeric means."""
        self.update_flat(self.flat(context, field), field)

    def update_flat(self, flat: Mapping[str, Any], field: str = "context") -> None:
        """:meth:`update` from a context already flattened (:meth:`flat`)."""
        get, count, mean = flat.get, self.count, self.mean
        for name, numeric, _, _, aux, _ in self._plan:
            value = get(name)
            if value is None or (isinstance(value, float) and value != value):
                continue  # missing: _is_missing, written out (a call per value costs here)
            kind = type(value)
            if numeric:
                if (kind is float or kind is int) and numeric == 1 and not value - value:
                    x = float(value)  # a finite number: the common case
                else:
                    x = _number(value, self.schema.features[name], f"{field}.{name}")
                # the running mean in Python floats: numpy's float64 arithmetic, faster
                n = float(count[aux]) + 1.0
                m = float(mean[aux])
                count[aux], mean[aux] = n, m + (x - m) / n
            elif kind is str and len(value) <= MAX_STRING_LENGTH:
                if value not in aux.slots:
                    aux.observe(value)
            else:
                spec = self.schema.features[name]
                for key in self._keys(value, spec, f"{field}.{name}"):
                    aux.observe(key)

    def publish(self, view: EncoderView | None = None) -> None:
        """Make everything learned so far visible to decisions (``encode(served=True)``),
        or what was learned when ``view`` was taken (:meth:`view`)."""
        view = view if view is not None else self.view()
        self.served_mean = view[0]
        for vocab, visible in zip(self._vocab.values(), view[1], strict=True):
            vocab.visible = visible

    def view(self) -> EncoderView:
        """What :meth:`publish` would show decisions now (a copy: later learning leaves it).

        Vocabularies only grow, so their sizes stand for them."""
        return self.mean.copy(), tuple(len(vocab.slots) for vocab in self._vocab.values())

    # -- introspection and state -------------------------------------------------------
    def columns(self) -> list[str]:
        """A readable name per column: ``age``, ``[age missing]``, ``[country = DE]``..."""
        names: list[str] = []
        for name, spec in self.schema.features.items():
            if spec.type in ("numeric", "boolean"):
                names.append(name)
            else:
                by_slot = {i: key for key, i in self._vocab[name].slots.items()}
                names.extend(
                    f"[{name} = {by_slot[i]}]" if i in by_slot else f"[{name} slot {i}]"
                    for i in range(spec.slots)
                )
                names.append(f"[{name} other]")
            if spec.missing:
                names.append(f"[{name} missing]")
        return names

    def vocabulary(self, name: str) -> list[str]:
        """The categories of feature ``name`` that have a column, in column order."""
        return sorted(self._vocab[name].slots, key=self._vocab[name].slots.__getitem__)

    def state(self) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Tensors (numeric statistics) and JSON metadata (vocabularies) of this encoder."""
        tensors = {
            "count": self.count.copy(),
            "mean": self.mean.copy(),
            "served_mean": self.served_mean.copy(),
        }
        meta = {
            name: {"slots": self.vocabulary(name), "counts": dict(v.counts), "visible": v.visible}
            for name, v in self._vocab.items()
        }
        return tensors, {"vocabularies": meta}

    def load_state(self, tensors: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> None:
        """Restore :meth:`state` output into an encoder of the same schema."""
        n = len(self._numeric)
        for key in ("count", "mean", "served_mean"):
            value = np.array(tensors[key], dtype=np.float64)
            if value.shape != (n,) or not np.isfinite(value).all():
                raise ValueError(f"encoder {key} does not match the schema")
            setattr(self, key, value)
        vocabularies = meta["vocabularies"]
        if set(vocabularies) != set(self._vocab):
            raise ValueError("encoder vocabularies do not match the schema")
        for name, saved in vocabularies.items():
            vocab = self._vocab[name]
            slots = [str(v) for v in saved["slots"]]
            if len(slots) > vocab.bound or not 0 <= int(saved["visible"]) <= len(slots):
                raise ValueError(f"encoder vocabulary {name!r} exceeds its bound")
            vocab.slots = {key: i for i, key in enumerate(slots)}
            vocab.counts = {str(k): int(c) for k, c in saved["counts"].items()}
            vocab.visible = int(saved["visible"])
