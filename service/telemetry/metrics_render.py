"""The Prometheus text exposition of the service's registry, at a bounded cost per model.

``prometheus_client.generate_latest`` builds a sample object for every series on every
rendering: about 0.8 ms per model, 8 s for 10,000 models.  :class:`ExpositionRenderer`
writes the text itself from the metric children and keeps each histogram child's lines
(17 to 22 per model and histogram, most of the text) until that histogram observes
something, and keeps each metric's encoded text :data:`_CHUNK` children a piece: a
piece whose children and values (read into a list in C) are those of the last rendering
is reused as it is.  An idle model costs a value read per series, no line written: a
rendering of 10,000 idle models wrote 200,000 counter and gauge lines, 0.33 s of CPU
(0.17 s now, mostly the value reads).  The output is the text format 0.0.4 that
``generate_latest`` writes, without the ``_created`` series (the service's dashboards
and alerts do not read them).

A rendering makes no container whose size grows with the number of models and lives
while the garbage collector runs: the text is encoded :data:`_CHUNK` children at a
time (a list of thousands of pieces, not of a hundred thousand lines), and the caches
are kept across renderings and changed in place (a dict rebuilt at every rendering is young, and every
collection of the young generations, triggered by any thread while the rendering runs,
walks all of its entries with the interpreter held: 10 to 50 ms with 10,000 models, the
event loop's largest stall).  For the same reason the text is never copied into one
buffer: the interpreter is held while bytes are joined, and ``b"".join`` of the 60 MB of
10,000 models held it 36-38 ms of CPU at once; appending the pieces to one growing
``bytearray`` a step at a time still copied all of it at once whenever the buffer grew
where ``realloc`` could not remap it (steps of 21-63 ms of CPU in the service, the loop's
largest).  A rendering is an :class:`Exposition`, the pieces themselves (most of them the
cached bytes of idle children, shared, not copied), which the route gzips and sends a
piece at a time.  :meth:`ExpositionRenderer.rendering` is the work a step at a time, for a
caller on the event loop that lets the loop run between steps.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Generator, Iterable, Iterator
from typing import Any

from prometheus_client import Counter, Gauge, Histogram

#: stands for a child's labels in the shared text of a never-observed histogram
_LABEL = "\x00labels\x00"
#: children per piece of text kept across renderings (an idle piece is reused whole)
_CHUNK = 128
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


class Exposition:
    """A rendering: the text as the encoded pieces it was written in, never joined (see the
    module); ``bytes(exposition)`` joins them, for a caller that can afford the copy."""

    __slots__ = ("pieces", "size")

    def __init__(self, pieces: list[bytes]) -> None:
        self.pieces = pieces
        self.size = sum(map(len, pieces))

    def __bytes__(self) -> bytes:
        return b"".join(self.pieces)


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
        # metric -> per :data:`_CHUNK` children: those children, their values, their text
        self._chunks: dict[Any, list[tuple[list[Any], list[list[float]], bytes]]] = {}

    @staticmethod
    def _label_text(names: tuple[str, ...], values: tuple[str, ...]) -> str:
        return ",".join(f'{n}="{_escape(v)}"' for n, v in zip(names, values, strict=True))

    def render(self) -> bytes:
        """The whole exposition joined into one ``bytes``, in one go (tests, one-off use)."""
        return bytes(self.exposition())

    def exposition(self) -> Exposition:
        """The whole exposition, in one go."""
        steps = self.rendering()
        while True:
            try:
                next(steps)
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]

    def rendering(self) -> Generator[None, None, Exposition]:
        """The whole exposition, a step (at most :data:`_CHUNK` children) per ``next``: a
        caller on the event loop lets the loop run between steps (see
        :mod:`service.http.routes.metrics`); the generator's value is the text."""
        out: list[bytes] = []
        children_seen = 0
        for metric in self.metrics:
            name, kind = metric._name, metric._type
            family = f"{name}_total" if kind == "counter" else name
            header = f"# HELP {family} {_help(metric._documentation)}\n# TYPE {family} {kind}\n"
            out.append(header.encode())
            if metric._labelnames:
                # one list, no tuple per child: the garbage collector tracks every container
                # made here (this one lives while one metric is written)
                with metric._lock:
                    children = list(metric._metrics.values())
            else:
                children = [metric]  # an unlabelled metric holds its own value
            children_seen += len(children)
            for piece in self._pieces(metric, family, children):
                out.append(piece)
                yield
        if len(self._labels) > children_seen:  # children were deleted: forget them
            self._forget_deleted()
        return Exposition(out)

    def _pieces(self, metric: Any, family: str, children: list[Any]) -> Iterator[bytes]:
        """The encoded lines of ``children``, :data:`_CHUNK` children a piece; a piece whose
        children and values are those of the last rendering is that rendering's bytes."""
        chunks = self._chunks.setdefault(metric, [])
        count = 0
        for count, start in enumerate(range(0, len(children), _CHUNK), start=1):
            part = children[start : start + _CHUNK]
            part_keys = _keys(metric._type, part)
            if count <= len(chunks):
                kept_children, kept_keys, kept = chunks[count - 1]
                # list equality: identity, then float equality, element by element, in C
                if kept_children == part and kept_keys == part_keys:
                    yield kept
                    continue
            text = self._write(metric, family, part, part_keys[0]).encode()
            if count <= len(chunks):
                chunks[count - 1] = (part, part_keys, text)
            else:
                chunks.append((part, part_keys, text))
            yield text
        del chunks[count:]

    def _write(self, metric: Any, family: str, children: list[Any], values: list[float]) -> str:
        """The lines of ``children`` (``values``: the counters' or gauges' values read)."""
        labels, names = self._labels, metric._labelnames
        lines = []
        for child, value in zip(children, values, strict=True):
            label = labels.get(child)
            if label is None:
                label = labels[child] = self._label_text(tuple(names), child._labelvalues)
            if metric._type == "histogram":
                lines.append(self._histogram(metric._name, label, child))
            else:
                braced = f"{{{label}}}" if label else ""
                lines.append(f"{family}{braced} {number(value)}\n")
        return "".join(lines)

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


_value_of = operator.attrgetter("_value._value")
_sum_of = operator.attrgetter("_sum._value")


def _keys(kind: str, children: list[Any]) -> list[list[float]]:
    """What says whether a child changed since the last rendering, read in C where it can be
    (a float read is atomic: a scrape may lag, never tear): a counter's or gauge's value; a
    histogram's sum and first bucket (every observation changes one of them)."""
    if kind == "histogram":
        return [list(map(_sum_of, children)), [c._buckets[0]._value for c in children]]
    return [list(map(_value_of, children))]


def registry_metrics(registry: Any) -> list[Any]:
    """The metric wrappers registered in ``registry``, in registration order."""
    return list(registry._collector_to_names)
