"""``category_codes``: each categorical feature's code as a number beside its one-hot columns.

The schema encodes a categorical feature as one column per category (its slots, then
"other", then "missing").  A tree splits such a feature one category at a time; a set
whose categories are ordered (an education level, a number of children, declared as
integer codes) needs a threshold on the code.  With the boosted option
``category_codes`` a categorical feature's code is one more column: the category's
declared value as a number where every declared value of the feature is one, else its
slot's position; "other" and "missing" (no slot set) read one below the smallest code.  Who reads the codes (the
ensemble alone, through :meth:`BoostedBandit._wide`, or both models, through the
feature stage's rows) and whether they replace the slot columns: the option's modes.
"""

from __future__ import annotations

import math

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.features import FeatureSchema


def _number(value: str) -> float | None:
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) else None


class CategoryCodes:
    """The code columns of a schema's categorical features.

    Parameters
    ----------
    schema
        The config's schema; its ``categorical`` features get a code column each
        (``tags`` and the other types none).
    """

    def __init__(self, schema: FeatureSchema, replace: bool = False) -> None:
        names: list[str] = []
        starts: list[int] = []
        values: list[FloatArray] = []
        fallback: list[float] = []
        at = 0
        keep: list[int] = []
        for name, spec in schema.features.items():
            if not (replace and spec.type == "categorical" and spec.slots > 0):
                keep.extend(range(at, at + spec.width))
            elif spec.missing:  # the missing column stays beside the code
                keep.append(at + spec.width - 1)
            if spec.type == "categorical" and spec.slots > 0:
                numbers = [_number(v) for v in spec.values or []]
                if spec.values and all(n is not None for n in numbers):
                    codes = np.array(numbers, dtype=np.float64)
                else:
                    codes = np.arange(spec.slots, dtype=np.float64)
                names.append(name)
                starts.append(at)
                values.append(codes)
                fallback.append(float(codes.min()) - 1.0)
            at += spec.width
        self.width = at
        #: the encoded columns a row keeps before its codes (replace: all but the
        #: categorical features' slots and "other" columns)
        self.keep = np.array(keep, dtype=np.int64)
        #: the categorical features with a code column, in their columns' order
        self.names = names
        self._starts = starts
        self._values = values
        self._fallback = fallback

    @property
    def count(self) -> int:
        """The code columns (one per categorical feature)."""
        return len(self._starts)

    @property
    def out_width(self) -> int:
        """The columns of an extended row."""
        return len(self.keep) + self.count

    def extend(self, x: FloatArray) -> FloatArray:
        """``x`` ``(d,)`` or ``(B, d)`` followed by its code columns ``(d + count,)`` /
        ``(B, d + count)``: per feature, the code of its set slot, else the fallback."""
        x = np.asarray(x, dtype=np.float64)
        if x.shape[-1] != self.width:
            raise ValueError(f"contexts have {x.shape[-1]} columns, the schema {self.width}")
        rows = x.reshape(-1, self.width)
        kept = len(self.keep)
        out = np.empty((rows.shape[0], self.out_width))
        out[:, :kept] = rows if kept == self.width else rows[:, self.keep]
        for j, (start, codes, low) in enumerate(
            zip(self._starts, self._values, self._fallback, strict=True)
        ):
            hot = rows[:, start : start + len(codes)]
            set_ = hot.sum(axis=1)
            out[:, kept + j] = hot @ codes + (1.0 - np.minimum(set_, 1.0)) * low
        return out.reshape(*x.shape[:-1], self.out_width)
