"""A predict and a feedback answered by the fast front run the domain's operations and
never enter the FastAPI layer (``tools.request_path`` traces them)."""

from __future__ import annotations

import asyncio

from tools.request_path import request_paths


def test_predict_and_feedback_go_edge_domain_store_without_http() -> None:
    paths = asyncio.run(request_paths())
    for name in ("predict", "feedback"):
        files = [f for f in paths[name] if f.startswith("service/")]
        assert "service/edge/serve.py" in files, (name, files)
        assert "service/domain/operations.py" in files, (name, files)
        assert not [f for f in files if f.startswith("service/http/")], (name, files)
        areas = [f.split("/")[1] for f in files]
        assert areas.index("domain") > areas.index("edge"), (name, files)
