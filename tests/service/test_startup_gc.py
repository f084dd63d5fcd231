"""A serving process leaves its startup objects out of later garbage collections, and
collects its young generation less often."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from service.main import YOUNG_THRESHOLD, create_app
from service.settings import load_settings

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("freeze", [False, True])
async def test_startup_objects_are_frozen_in_a_serving_process(
    tmp_path: Path, freeze: bool
) -> None:
    threshold = gc.get_threshold()
    app = create_app(load_settings(data_dir=tmp_path), freeze_startup=freeze)
    gc.unfreeze()
    try:
        async with app.router.lifespan_context(app):
            frozen = gc.get_freeze_count()
            registry = app.state.registry
            # what a collection walks (the frozen objects are not among them)
            collected = any(obj is registry for obj in gc.get_objects())
            young = gc.get_threshold()[0]
        if freeze:  # the started service itself is frozen, its young generation larger
            assert frozen > 10_000
            assert not collected
            assert young == YOUNG_THRESHOLD
        else:
            assert frozen == 0
            assert collected
            assert young == threshold[0]
    finally:
        gc.unfreeze()
        gc.set_threshold(*threshold)
