"""A serving process leaves CPython's collector as it comes at start-up: nothing frozen,
the thresholds unchanged (docs/decisions/0007: the start-up freeze and a larger young
threshold bought under 10% on every row measured, and went back to the defaults).  New
models' objects are frozen by ``HeapFreezer`` (tests/service/domain/test_heap_freeze.py)."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from service.main import create_app_from_env

pytestmark = pytest.mark.anyio


async def test_a_serving_process_keeps_the_collectors_defaults(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BANDITREE_DATA_DIR", str(tmp_path))
    threshold = gc.get_threshold()
    gc.unfreeze()
    app = create_app_from_env()
    try:
        async with app.router.lifespan_context(app):
            registry = app.state.registry
            assert gc.get_freeze_count() == 0
            assert gc.get_threshold() == threshold
            # what a collection walks: the started service is among it
            assert any(obj is registry for obj in gc.get_objects())
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
