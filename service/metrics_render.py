"""The Prometheus text exposition of the service's registry, at a bounded cost per model.

``prometheus_client.generate_latest`` builds a sample object for every series on every
rendering: about 0.8 ms per model, 8 s for 10,000 models.  :class:`ExpositionRenderer`
writes the text itself from the metric children and keeps each histogram child's lines
(17 to 22 per model and histogram, most of the text) until that histogram observes
something: an idle model costs a value read and one line per counter or gauge.  The
output is the text format 0.0.4 that ``generate_latest`` writes, without the
``_created`` series (the service's dashboards and alerts do not read them).

A rendering makes no container whose size grows with the number of models and lives
while the garbage collector runs: the text is encoded a few hundred lines at a time (a list of
thousands of pieces, not of a hundred thousand lines), and the caches are kept across
renderings and changed in place (a dict rebuilt at every rendering is young, and every
collection of the young generations, triggered by any thread while the rendering runs,
walks all of its entries with the interpreter held: 10 to 50 ms with 10,000 models, the
event loop's largest stall).  For the same reason no single step copies the whole text
more than once: the interpreter is held while a string is joined.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

from prometheus_client import Counter, Gauge, Histogram

#: stands for a child's labels in the shared text of a never-observed histogram
_LABEL = "\x00labels\x00"
#: lines per encoded piece of a rendering
_PIECE_LINES = 512
_HistogramKey = Any  # a histogram child (hashed by identity: cheap, stable while it lives)


def number(value: float) -> str:
    """A sample value as Prometheus writes it (``+Inf``, ``NaN``, ``1.0``, ``2.5e-05``)."""
    if value == 0.0:
        return "0.0"
    if value == math.inf:
        return "+Inf"
    if value == -math.inf:
        return "-Inf"
    if value != value:
        return "NaN"
    return repr(float(value))


class _Text:
    """Text written line by line, kept as encoded pieces of :data:`_PIECE_LINES` lines."""

    def __init__(self) -> None:
        self._lines: list[str] = []
        self._pieces: list[bytes] = []

    def write(self, text: str) -> None:
        self._lines.append(text)
        if len(self._lines) >= _PIECE_LINES:
            self._pieces.append("".join(self._lines).encode())
            self._lines.clear()

    def getvalue(self) -> bytes:
        self._pieces.append("".join(self._lines).encode())
        self._lines.clear()
        return b"".join(self._pieces)


def _escape(value: str) -> str:
    return value.replace("\\", r"\\").replace("\n", r"\n").replace('"', r"\"")


def _help(text: str) -> str:
    return text.replace("\\", r"\\").replace("\n", r"\n")


class ExpositionRenderer:
    """Renders ``metrics`` (prometheus_client wrappers with labels) to text, cached per child.

    Not thread-safe: one rendering at a time (the caller's worker thread).
    """

    def __init__(self, metrics: Iterable[Any]) -> None:
        self.metrics = list(metrics)
        for metric in self.metrics:
            if not isinstance(metric, Counter | Gauge | Histogram):
                raise TypeError(f"{metric!r}: only counters, gauges and histograms")
        # both kept across renderings and changed in place (see the module's docstring)
        self._labels: dict[Any, str] = {}  # child -> its label text
        self._histograms: dict[_HistogramKey, tuple[float, float, str]] = {}
        self._empty: dict[str, str] = {}  # histogram name -> its never-observed lines

    @staticmethod
    def _label_text(names: tuple[str, ...], values: tuple[str, ...]) -> str:
        return ",".join(f'{n}="{_escape(v)}"' for n, v in zip(names, values, strict=True))

    def render(self) -> bytes:
        """The whole exposition."""
        out = _Text()
        labels = self._labels
        children_seen = 0
        for metric in self.metrics:
            name, names = metric._name, tuple(metric._labelnames)
            kind = metric._type
            family = f"{name}_total" if kind == "counter" else name
            out.write(f"# HELP {family} {_help(metric._documentation)}\n# TYPE {family} {kind}\n")
            if names:
                # one list, no tuple per child: the garbage collector tracks every container
                # made here (this one lives while one metric is written)
                with metric._lock:
                    children = list(metric._metrics.values())
            else:
                children = [metric]  # an unlabelled metric holds its own value
            children_seen += len(children)
            for child in children:
                label = labels.get(child)
                if label is None:
                    label = labels[child] = self._label_text(names, child._labelvalues)
                if kind == "histogram":
                    out.write(self._histogram(name, label, child))
                    continue
                # the value without its lock: a float read is atomic, a scrape may lag
                value = child._value._value
                braced = f"{{{label}}}" if label else ""
                out.write(f"{family}{braced} {number(value)}\n")
        if len(labels) > children_seen:  # children were deleted: forget them
            self._forget_deleted()
        return out.getvalue()

    def _forget_deleted(self) -> None:
        """Drop the cache entries of children no longer in their metric (in place)."""
        live: set[int] = set()
        for metric in self.metrics:
            if metric._labelnames:
                with metric._lock:
                    live.update(map(id, metric._metrics.values()))
            else:
                live.add(id(metric))
        for cache in (self._labels, self._histograms):
            for child in [c for c in cache if id(c) not in live]:
                del cache[child]

    def _histogram(self, name: str, label: str, child: Any) -> str:
        # every observation changes the sum or, for an amount of 0, the first bucket
        total, first = child._sum._value, child._buckets[0]._value
        out = self._histograms
        cached = out.get(child)
        if cached is not None and cached[0] == total and cached[1] == first:
            return cached[2]
        if total == 0.0 and first == 0.0 and label and not any(b._value for b in child._buckets):
            text = self._empty_histogram(name, child._upper_bounds).replace(_LABEL, label)
            out[child] = (total, first, text)
            return text
        lines, acc = [], 0.0
        sep = "," if label else ""
        for bound, bucket in zip(child._upper_bounds, child._buckets, strict=True):
            acc += bucket.get()
            lines.append(f'{name}_bucket{{{label}{sep}le="{number(bound)}"}} {number(acc)}\n')
        braced = f"{{{label}}}" if label else ""
        lines.append(f"{name}_count{braced} {number(acc)}\n")
        lines.append(f"{name}_sum{braced} {number(total)}\n")
        text = "".join(lines)
        out[child] = (total, first, text)
        return text

    def _empty_histogram(self, name: str, bounds: list[float]) -> str:
        """The lines of a labelled histogram that never observed, with :data:`_LABEL` for
        its labels (a new model's histograms cost a string replacement each)."""
        text = self._empty.get(name)
        if text is None:
            lines = [f'{name}_bucket{{{_LABEL},le="{number(b)}"}} 0.0\n' for b in bounds]
            lines += [f"{name}_count{{{_LABEL}}} 0.0\n", f"{name}_sum{{{_LABEL}}} 0.0\n"]
            text = self._empty[name] = "".join(lines)
        return text


def registry_metrics(registry: Any) -> list[Any]:
    """The metric wrappers registered in ``registry``, in registration order."""
    return list(registry._collector_to_names)
