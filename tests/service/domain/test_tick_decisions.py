"""One-context predicts of one loop tick are decided together, with the same decisions.

:mod:`service.domain.runtime.api` decides the predicts queued in one event-loop
tick with one ``act_columns``.  The answers and stored records must be those of ``act``
called request by request with the same event ids (every draw is fixed by the event
id); every decision must be stored before its answer; a request the batch cannot take
must get the error it gets alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import numpy as np
import orjson
import pytest

from banditree.core import Feedback
from banditree.core.codec import BINARY_PREFIX, read_decision
from banditree.learners import build_learner
from service.domain.runtime import api as tick_decisions
from service.domain.runtime.api import MIN_BATCH, decide_batch, decide_one, new_event_ids
from service.main import create_app
from service.settings import load_settings
from service.store.base import StoreUnavailable

CONFIGS: list[dict[str, Any]] = [
    {"kind": "dgt", "n_features": 5, "n_actions": 4},
    {"kind": "dgt", "n_features": 5, "n_actions": 4, "height": 7},
    {"task": "regression", "n_features": 5, "estimator": "two_point", "kind": "dgt"},
    {"task": "regression", "n_features": 5, "estimator": "one_point", "kind": "dgt"},
    {"kind": "dgt", "n_actions": 3, "features": {"a": "numeric", "b": {"type": "categorical"}}},
    # the default kind, boosted, its blend deciding within the 64 rounds learned
    {
        "n_actions": 3,
        "features": {"a": "numeric", "b": {"type": "categorical"}},
        "options": {"first_fit": 20},
    },
]


def _contexts(config: dict[str, Any], rows: int) -> list[Any]:
    rng = np.random.default_rng(7)
    if "features" in config:
        return [{"a": float(rng.normal()), "b": f"v{i % 3}"} for i in range(rows)]
    return rng.normal(size=(rows, 5)).round(4).tolist()


def _trained(config: dict[str, Any]) -> Any:
    """A learner that has learned a little (its tree routes to more than one leaf)."""
    learner = build_learner(config)
    contexts = _contexts(config, 64)
    for i, context in enumerate(contexts):
        decision = learner.act(context, event_id=f"train-{i}")
        if decision.probes is not None:
            learner.learn(decision, Feedback(losses=(float(i % 3), float(i % 5))))
        else:
            learner.learn(decision, Feedback(loss=float(i % 2)))
    return learner


def _id(config: dict[str, Any]) -> str:
    kind = config.get("kind", "default")
    return f"{kind}-named" if "features" in config else config.get("kind", config.get("task"))


@pytest.mark.parametrize("config", CONFIGS, ids=_id)
@pytest.mark.parametrize("rows", [MIN_BATCH, 9, 16, 40])
def test_batched_decisions_are_those_of_act_one_by_one(config: dict[str, Any], rows: int) -> None:
    learner = _trained(config)
    assert learner.batch_exact
    if "options" in config:  # boosted: the blend decides, not the tree alone
        assert learner.inner.ensemble_decides
    contexts, ids = _contexts(config, rows), new_event_ids(rows)
    batched = decide_batch(learner, "uid-1", contexts, ids)
    alone = [decide_one(learner, "uid-1", c, None, e) for c, e in zip(contexts, ids, strict=True)]
    # the same answers, whether as dicts or as the kernel's JSON (an orjson Fragment)
    publics = [orjson.loads(orjson.dumps(public)) for public in batched.publics]
    assert publics == [public for _, public, _ in alone]
    assert batched.payloads == [payload for _, _, payload in alone]
    assert batched.explored == sum(decision.explored for decision, _, _ in alone)
    assert len({public.get("leaf") for public in publics}) > 1 or "features" in config


# -- through the app: one tick of concurrent predicts ------------------------------------


def _scope(method: str, path: str, body: bytes) -> dict[str, Any]:
    return {
        "type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": method,
        "scheme": "http", "path": path, "raw_path": path.encode(), "query_string": b"",
        "root_path": "", "client": ("127.0.0.1", 1), "server": ("127.0.0.1", 80),
        "headers": [(b"content-type", b"application/json"),
                    (b"content-length", b"%d" % len(body))],
    }  # fmt: skip


async def _call(app: Any, method: str, path: str, data: Any) -> tuple[int, Any]:
    body = orjson.dumps(data)
    sent: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    await app(_scope(method, path, body), receive, send)
    payload = b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body")
    return sent[0]["status"], orjson.loads(payload)


@pytest.fixture
async def app(tmp_path: Path) -> AsyncIterator[Any]:
    served = create_app(load_settings(data_dir=tmp_path / "data"))
    async with served.router.lifespan_context(served):
        status, _ = await _call(served, "PUT", "/v1/models/m", {"n_features": 3, "n_actions": 4})
        assert status in (200, 201)
        yield served


@pytest.fixture
def batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The size of every batch ``decide_batch`` decided."""
    sizes: list[int] = []
    real = tick_decisions.decide_batch

    def spy(learner: Any, uid: str, contexts: list[Any], ids: list[str]) -> Any:
        sizes.append(len(contexts))
        return real(learner, uid, contexts, ids)

    monkeypatch.setattr(tick_decisions, "decide_batch", spy)
    return sizes


@pytest.mark.anyio
async def test_one_tick_is_decided_together_and_stored_before_answers(
    app: Any, batches: list[int]
) -> None:
    contexts = [[0.1 * i, -0.2 * i, 0.3] for i in range(12)]
    answers = await asyncio.gather(
        *(_call(app, "POST", "/v1/models/m/predict", {"context": c}) for c in contexts)
    )
    assert batches and max(batches) >= MIN_BATCH  # decided together
    runtime = app.state.registry.runtimes["m"]
    for status, answer in answers:
        assert status == 200
        payload = (await runtime.store.peek_event("m", answer["event_id"], now=0)).payload
        stored = read_decision(payload, runtime.uid)
        assert stored is not None and payload.startswith(BINARY_PREFIX)
        assert (stored.action, stored.propensity) == (answer["action"], answer["probability"])
    assert len({a["event_id"] for _, a in answers}) == len(answers)
    status, _ = await _call(
        app, "POST", "/v1/models/m/feedback", {"event_id": answers[0][1]["event_id"], "loss": 0.5}
    )
    assert status == 200


@pytest.mark.anyio
async def test_a_refused_context_gets_its_own_error_in_a_batch(
    app: Any, batches: list[int]
) -> None:
    alone = await _call(app, "POST", "/v1/models/m/predict", {"context": [0.1, 0.2]})
    assert alone[0] == 422
    bodies = [{"context": [0.1, 0.2, 0.3]}] * 8 + [{"context": [0.1, 0.2]}]
    answers = await asyncio.gather(
        *(_call(app, "POST", "/v1/models/m/predict", body) for body in bodies)
    )
    assert answers[-1] == alone  # the same status and the same body naming field and bound
    assert all(status == 200 for status, _ in answers[:-1])


@pytest.mark.anyio
async def test_an_unreachable_store_answers_unlogged(
    app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = app.state.registry.runtimes["m"].store

    def refused(*args: Any, **kwargs: Any) -> asyncio.Future[None]:
        failed: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        failed.set_exception(StoreUnavailable("sqlite: disk I/O error"))
        return failed

    monkeypatch.setattr(store, "queue_events", refused)
    answers = await asyncio.gather(
        *(
            _call(app, "POST", "/v1/models/m/predict", {"context": [0.1, 0.2, 0.3]})
            for _ in range(8)
        )
    )
    assert all(status == 200 and answer["logged"] is False for status, answer in answers)


@pytest.mark.anyio
async def test_a_ticks_decisions_go_in_one_write_and_a_request_that_leaves_ends_its_own_wait(
    app: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = app.state.registry.runtimes["m"].store
    writes: list[tuple[list[tuple[str, str]], asyncio.Future[None]]] = []
    real = store.queue_events

    def held(name: str, events: list[tuple[str, str]], **kwargs: Any) -> asyncio.Future[None]:
        real(name, events, **kwargs)  # stored at the tick's commit, as ever
        shared: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        writes.append((events, shared))  # answered when the test says
        return shared

    monkeypatch.setattr(store, "queue_events", held)
    contexts = [[0.1 * i, -0.2, 0.3] for i in range(8)]
    calls = [
        asyncio.ensure_future(_call(app, "POST", "/v1/models/m/predict", {"context": c}))
        for c in contexts
    ]
    for _ in range(20):  # the tick decides and queues its write; the requests wait on it
        await asyncio.sleep(0)
    assert [len(events) for events, _ in writes] == [8]  # one store call for the tick
    calls[0].cancel()  # its client went away
    await asyncio.sleep(0)
    shared = writes[0][1]
    assert not shared.done()  # the others' wait goes on
    shared.set_result(None)
    answers = await asyncio.gather(*calls[1:])
    ids = [event_id for event_id, _ in writes[0][0]]
    for status, answer in answers:
        assert status == 200 and "logged" not in answer and answer["event_id"] in ids
    with pytest.raises(asyncio.CancelledError):
        await calls[0]
