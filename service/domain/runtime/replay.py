"""Applying log entries to a learner: the one code path of the learner, restarts and audits.

A log entry is a stored decision (binary, or the JSON ``{"uid": ..., "decision": {...}}``
of logs written before the binary form: :mod:`banditree.core.codec`) with the JSON of
its feedback, or no feedback for a decision that expired (the model's default loss is
applied then, when it has one).  :func:`replay` rebuilds a model offline from an
exported log; the live learner runs the same :func:`apply_entry`, so both make the same
floating-point operations in the same order.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any, overload

import numpy as np
import orjson

from banditree.core.codec import (
    BINARY_PREFIX,
    decision_from_parsed,
    read_binaries,
    read_decision,
)
from banditree.kernel import STORED_NONE, STORED_PYTHON, decode_stored
from banditree.kernel import native as native_kernel
from banditree.learners import (
    Decision,
    Feedback,
    InvalidInput,
    Learner,
    build_learner,
)
from banditree.logs import log_row
from service.store import LogChunk, LogEntry

log = logging.getLogger("banditree.service")


def default_feedback(decision: Decision, default_loss: float | None) -> Feedback | None:
    """The feedback of an expired decision: the default loss, or None (nothing to learn)."""
    if default_loss is None:
        return None
    if decision.probes is not None:
        return Feedback(losses=(default_loss, default_loss))
    return Feedback(loss=default_loss)


def entry_row(entry: LogEntry, uid: str, default_loss: float | None) -> dict[str, Any] | None:
    """One log entry as a row of the exported log (:func:`banditree.logs.log_row`).

    An expired decision is a row with ``source: "expired"`` and the default loss; one
    that expired without a default loss (or whose decision cannot be read) is None.
    """
    decision = read_decision(entry.decision, uid)
    if decision is None:
        return None
    if entry.feedback is None:
        feedback = default_feedback(decision, default_loss)
        source = "expired"
    else:
        feedback, source = Feedback.from_dict(orjson.loads(entry.feedback)), "feedback"
    if feedback is None:
        return None
    return log_row(
        decision, feedback, offset=entry.offset, time_seconds=entry.acked_at, source=source
    )


@dataclass(frozen=True)
class Applied:
    """What one entry did: learned from (``learned``), changed the parameters (``changed``)."""

    learned: bool
    changed: bool


_NOT_LEARNED, _UNCHANGED, _CHANGED = (
    Applied(False, False),
    Applied(True, False),
    Applied(True, True),
)


def _skipped(entry: LogEntry, err: Exception) -> None:
    log.warning("log entry %d (%s) skipped: %s", entry.offset, entry.event_id, err)


def decode_entry(
    entry: LogEntry, *, uid: str, default_loss: float | None
) -> tuple[Decision, Feedback] | None:
    """The decision and feedback to learn from ``entry``, or None: another model's entry,
    an expiry with no default loss, or an entry that cannot be read (logged)."""
    try:
        decision = read_decision(entry.decision, uid)
        if decision is None:
            return None
        if entry.feedback is None:
            feedback = default_feedback(decision, default_loss)
        else:
            feedback = Feedback.from_dict(orjson.loads(entry.feedback))
        return None if feedback is None else (decision, feedback)
    except (InvalidInput, ValueError, KeyError, TypeError) as err:
        _skipped(entry, err)
        return None


def _json_array(texts: list[str]) -> list[Any] | None:
    """The JSON documents ``texts`` parsed in one call, or None when that does not give
    exactly one value per text (then each is read on its own)."""
    try:
        values = orjson.loads("[" + ",".join(texts) + "]")
    except orjson.JSONDecodeError:
        return None
    return values if isinstance(values, list) and len(values) == len(texts) else None


def _feedbacks(texts: list[str]) -> dict[str, Feedback | None] | None:
    """The feedback of each distinct text of ``texts``, parsed by one JSON call (None for
    one that does not make a feedback: its entry is read on its own), or None when the
    batch reading cannot take them.  A log repeats the same few feedbacks (a loss of 0
    or 1): each is parsed and checked once; a Feedback is immutable, so shared."""
    distinct = list(dict.fromkeys(texts))
    answers = _json_array(distinct)
    if answers is None:
        return None
    out: dict[str, Feedback | None] = {}
    for text, data in zip(distinct, answers, strict=True):
        try:
            out[text] = Feedback.from_dict(data) if type(data) is dict else None
        except (InvalidInput, ValueError, KeyError, TypeError, AttributeError):
            out[text] = None
    return out


def decode_entries(
    entries: list[LogEntry], *, uid: str, default_loss: float | None
) -> list[tuple[Decision, Feedback] | None]:
    """:func:`decode_entry` of every entry: the binary stored decisions read by
    :func:`~banditree.core.codec.read_binaries` (their contexts checked in one numpy
    call), the JSON ones (logs written before the binary form) parsed by one JSON call,
    the distinct feedbacks by another (an entry the batch reading cannot take is read on
    its own, so its outcome and its log line are :func:`decode_entry`'s)."""
    binary: list[LogEntry] = []
    texts: list[LogEntry] = []
    for entry in entries:  # one look at each entry's form
        (binary if entry.decision.startswith(BINARY_PREFIX) else texts).append(entry)
    records = _json_array([e.decision for e in texts]) if texts else []
    feedbacks = _feedbacks([e.feedback for e in entries if e.feedback is not None])
    if records is None or feedbacks is None:
        return [decode_entry(e, uid=uid, default_loss=default_loss) for e in entries]
    decided: dict[int, Decision | ValueError | None] = {}
    if binary:
        read = read_binaries([e.decision for e in binary], uid)
        decided = dict(zip(map(id, binary), read, strict=True)) if texts else {}
        if not texts:  # the common case inline: a decision and its feedback, read
            out_binary: list[tuple[Decision, Feedback] | None] = []
            for entry, item in zip(entries, read, strict=True):
                text = entry.feedback
                if type(item) is Decision and text is not None:
                    feedback = feedbacks[text]
                    if feedback is not None:
                        out_binary.append((item, feedback))
                        continue
                out_binary.append(_paired(entry, item, feedbacks, uid, default_loss))
            return out_binary
    parsed = dict(zip(map(id, texts), records, strict=True))
    out: list[tuple[Decision, Feedback] | None] = []
    for entry in entries:
        key = id(entry)
        if key in decided:
            out.append(_paired(entry, decided[key], feedbacks, uid, default_loss))
            continue
        data = parsed[key]
        if type(data) is not dict:
            out.append(decode_entry(entry, uid=uid, default_loss=default_loss))
            continue
        if data.get("uid") != uid:
            out.append(None)
            continue
        try:
            decision = decision_from_parsed(data["decision"])
        except (InvalidInput, ValueError, KeyError, TypeError, AttributeError):
            out.append(decode_entry(entry, uid=uid, default_loss=default_loss))  # names it
            continue
        out.append(_paired(entry, decision, feedbacks, uid, default_loss))
    return out


def _paired(
    entry: LogEntry,
    decision: Decision | ValueError | None,
    feedbacks: dict[str, Feedback | None],
    uid: str,
    default_loss: float | None,
) -> tuple[Decision, Feedback] | None:
    """The pair to learn of ``entry`` whose decision was read as ``decision`` (None:
    another model's; an error: refused, logged), its feedback read from ``feedbacks``."""
    if decision is None:
        return None
    if isinstance(decision, ValueError):
        _skipped(entry, decision)
        return None
    if entry.feedback is None:
        feedback = default_feedback(decision, default_loss)
    elif (feedback := feedbacks[entry.feedback]) is None:
        return decode_entry(entry, uid=uid, default_loss=default_loss)  # names the feedback
    return None if feedback is None else (decision, feedback)


def apply_entry(
    learner: Learner, entry: LogEntry, *, uid: str, default_loss: float | None
) -> Applied:
    """Learn from one log entry; entries that cannot be learned from are skipped, logged."""
    pair = decode_entry(entry, uid=uid, default_loss=default_loss)
    if pair is None:
        return Applied(False, False)
    try:
        return Applied(True, learner.learn(*pair))
    except (InvalidInput, ValueError, KeyError, TypeError) as err:
        _skipped(entry, err)
        return Applied(False, False)


def apply_entries(
    learner: Learner,
    entries: list[LogEntry],
    pairs: list[tuple[Decision, Feedback] | None],
) -> list[Applied]:
    """:func:`apply_entry` of each entry whose decoded pair (:func:`decode_entries`) is
    ``pairs``' item, by one :meth:`~banditree.learners.Learner.learn_batch`: the same
    state, the same outcomes and log lines."""
    wanted, results = _learn_pairs(learner, pairs)
    return _outcomes(len(entries), wanted, results, entries.__getitem__)


_Results = list[bool | ValueError | KeyError | TypeError]


def _learn_pairs(
    learner: Learner, pairs: list[tuple[Decision, Feedback] | None]
) -> tuple[list[int], _Results]:
    """The positions of ``pairs`` learned (those not None) and their results, by one
    :meth:`~banditree.learners.Learner.learn_batch`."""
    wanted = [i for i, pair in enumerate(pairs) if pair is not None]
    kept = [pair for pair in pairs if pair is not None]
    return wanted, learner.learn_batch([pair[0] for pair in kept], [pair[1] for pair in kept])


def _outcomes(
    n: int, wanted: list[int], results: _Results, entry: Callable[[int], LogEntry]
) -> list[Applied]:
    """What each of ``n`` entries did, ``results`` those of the entries at ``wanted``;
    an entry refused is logged (``entry(i)``: the ``i``-th entry)."""
    out = [_NOT_LEARNED] * n
    for i, result in zip(wanted, results, strict=True):
        if isinstance(result, bool):
            out[i] = _CHANGED if result else _UNCHANGED
        else:
            _skipped(entry(i), result)
    return out


def _counts(
    wanted: list[int], results: _Results, entry: Callable[[int], LogEntry]
) -> tuple[int, int]:
    """The entries learned and those that changed the parameters among ``results`` (of
    the entries at ``wanted``), an entry refused logged: what :func:`_outcomes` tells,
    counted, with no step an entry when every one was learned (the common case)."""
    changed = results.count(True)  # an error equals neither True nor False
    learned = changed + results.count(False)
    if learned < len(results):
        for i, result in zip(wanted, results, strict=True):
            if not isinstance(result, bool):
                _skipped(entry(i), result)
    return learned, changed


class _Pairs:
    """The decision and feedback of each entry of a chunk to learn (``index``: their
    positions in ``chunk``), made by :func:`decode_entry` only when the learner asks for
    one (an entry the kernel stops at, the buffer of an open window)."""

    def __init__(
        self,
        chunk: LogChunk,
        index: list[int],
        given: dict[int, tuple[Decision, Feedback]],
        uid: str,
        default_loss: float | None,
    ) -> None:
        self.chunk, self.index, self.made = chunk, index, given
        self.uid, self.default_loss = uid, default_loss

    def pair(self, j: int) -> tuple[Decision, Feedback]:
        made = self.made.get(j)
        if made is None:
            entry = self.chunk.entry(self.index[j])
            made = decode_entry(entry, uid=self.uid, default_loss=self.default_loss)
            if made is None:  # the kernel read a pair here: the Python decoding must too
                raise RuntimeError(f"log entry {entry.offset}: the decodings disagree")
            self.made[j] = made
        return made


class _Column(Sequence[Any]):
    """The decisions (``item`` 0) or the feedbacks (1) of :class:`_Pairs`, made when read."""

    def __init__(self, pairs: _Pairs, item: int) -> None:
        self.pairs, self.item = pairs, item

    def __len__(self) -> int:
        return len(self.pairs.index)

    @overload
    def __getitem__(self, j: int) -> Any: ...

    @overload
    def __getitem__(self, j: slice) -> list[Any]: ...

    def __getitem__(self, j: int | slice) -> Any:
        if isinstance(j, slice):
            return [self[i] for i in range(len(self))[j]]
        if j < 0:
            j += len(self)
        if not 0 <= j < len(self):
            raise IndexError(j)
        return self.pairs.pair(j)[self.item]


@functools.lru_cache(maxsize=256)
def _utf8(uid: str) -> bytes:
    return uid.encode()


def apply_chunk(
    learner: Learner, chunk: LogChunk, *, uid: str, default_loss: float | None
) -> list[Applied]:
    """What each entry of ``chunk`` did, learned by :func:`_learn_chunk`."""
    wanted, results = _learn_chunk(learner, chunk, uid=uid, default_loss=default_loss)
    return _outcomes(len(chunk), wanted, results, chunk.entry)


def count_chunk(
    learner: Learner, chunk: LogChunk, *, uid: str, default_loss: float | None
) -> tuple[int, int]:
    """:func:`apply_chunk`'s outcomes counted: ``(entries learned, entries that changed the
    parameters)``, the same state and log lines, with no object made an entry."""
    wanted, results = _learn_chunk(learner, chunk, uid=uid, default_loss=default_loss)
    return _counts(wanted, results, chunk.entry)


def _learn_chunk(
    learner: Learner, chunk: LogChunk, *, uid: str, default_loss: float | None
) -> tuple[list[int], _Results]:
    """The positions of the entries of ``chunk`` given to the learner and its results
    for them (an entry left out: another model's, an expiry without a default loss, one
    the decoding refuses, logged there).

    :func:`apply_entries`' learning of the decoded entries of ``chunk``: the same state,
    results and log lines.  Where the compiled kernel learns the learner's chunks
    (:meth:`~banditree.learners.Learner.column_width`), one kernel call decodes the
    chunk's stored texts into the columns it learns
    (:func:`banditree.kernel.decode_stored`), with no Decision or LogEntry an entry;
    the entries of a form that call does not read go through :func:`decode_entries`
    (each as :func:`decode_entry` reads it: the same pair, or the same log line)."""
    width = learner.column_width()
    module = None if width is None else native_kernel()
    if width is None or module is None:
        return _learn_pairs(
            learner, decode_entries(chunk.entries(), uid=uid, default_loss=default_loss)
        )
    rows, actions, propensity, loss, status = decode_stored(
        module, chunk.decisions, chunk.feedbacks, _utf8(uid), default_loss, width
    )
    others = np.flatnonzero(status == STORED_PYTHON).tolist()
    decoded: dict[int, tuple[Decision, Feedback]] = {}
    if others:
        read = decode_entries([chunk.entry(i) for i in others], uid=uid, default_loss=default_loss)
        for i, pair in zip(others, read, strict=True):
            if pair is None:
                status[i] = STORED_NONE
            else:
                decoded[i] = pair
    index = np.flatnonzero(status != STORED_NONE)
    wanted = index.tolist()
    if not wanted:
        return wanted, []
    if len(wanted) < len(chunk):
        rows, actions = rows[index], actions[index]
        propensity, loss = propensity[index], loss[index]
    at = {i: j for j, i in enumerate(wanted)} if decoded else {}
    pairs = _Pairs(chunk, wanted, {at[i]: pair for i, pair in decoded.items()}, uid, default_loss)
    results = learner.learn_columns(
        rows, actions, propensity, loss, _Column(pairs, 0), _Column(pairs, 1),
        read=sorted(pairs.made),
    )  # fmt: skip
    return wanted, results


def replay(
    config: dict[str, Any],
    entries: Iterable[LogEntry],
    *,
    uid: str,
    default_loss: float | None,
    learner: Learner | None = None,
) -> Learner:
    """A learner built from ``config`` (or ``learner``) after applying ``entries`` in order."""
    model = learner if learner is not None else build_learner(config)
    for entry in entries:
        apply_entry(model, entry, uid=uid, default_loss=default_loss)
    return model
