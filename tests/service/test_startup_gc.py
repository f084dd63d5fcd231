"""A serving process leaves its startup objects out of later garbage collections."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from service.main import create_app
from service.settings import load_settings

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize("freeze", [False, True])
async def test_startup_objects_are_frozen_in_a_serving_process(
    tmp_path: Path, freeze: bool
) -> None:
    app = create_app(load_settings(data_dir=tmp_path), freeze_startup=freeze)
    gc.unfreeze()
    try:
        async with app.router.lifespan_context(app):
            frozen = gc.get_freeze_count()
            registry = app.state.registry
            # what a collection walks (the frozen objects are not among them)
            collected = any(obj is registry for obj in gc.get_objects())
        if freeze:  # the started service itself is frozen
            assert frozen > 10_000
            assert not collected
        else:
            assert frozen == 0
            assert collected
    finally:
        gc.unfreeze()
