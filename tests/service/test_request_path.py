"""A predict and a feedback answered by the fast front run the domain's operations,
never enter the FastAPI layer and never call back up an area; a predict crosses at most
10 service files (``tools.request_path`` traces them)."""

from __future__ import annotations

import asyncio

from tools.request_path import request_traces, upward_calls


def test_predict_and_feedback_go_edge_domain_store_without_http() -> None:
    traces = asyncio.run(request_traces())
    for name in ("predict", "feedback"):
        paths, calls = traces[name]
        files = [f for f in paths if f.startswith("service/")]
        assert "service/edge/serve.py" in files, (name, files)
        assert "service/domain/operations.py" in files, (name, files)
        assert not [f for f in files if f.startswith("service/http/")], (name, files)
        areas = [f.split("/")[1] for f in files]
        assert areas.index("domain") > areas.index("edge"), (name, files)
        assert upward_calls(calls) == [], name
        assert any(source.startswith("service/edge/") for source, _ in calls), name
    predict = [f for f in traces["predict"][0] if f.startswith("service/")]
    assert len(predict) <= 10, "\n".join(predict)


def test_a_call_up_an_area_is_found() -> None:
    calls = {
        ("service/edge/app.py", "service/domain/operations.py"),
        ("service/store/base.py", "service/domain/runtime/api.py"),
        ("service/domain/runtime/api.py", "service/telemetry/tick_metrics.py"),
        ("banditree/core/codec.py", "service/edge/app.py"),
    }
    assert upward_calls(calls) == [("service/store/base.py", "service/domain/runtime/api.py")]
