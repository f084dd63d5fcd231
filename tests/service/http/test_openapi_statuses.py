"""The OpenAPI document declares every status an operation answers (issue 41, item 8):
413 and 431 on every operation, 409 on predict (an event id whose decision was settled)
and on rank, 422 on every operation with a body (cross-field refusals included)."""

from __future__ import annotations

from pathlib import Path

from service.main import create_app
from service.settings import load_settings


def test_every_operation_declares_413_431_and_its_own_refusals(tmp_path: Path) -> None:
    document = create_app(load_settings(data_dir=tmp_path)).openapi()
    for path, operations in document["paths"].items():
        for method, operation in operations.items():
            declared = set(operation["responses"])
            assert {"413", "431"} <= declared, (method, path)
            if "requestBody" in operation:  # Personalizer's routes refuse a field with 400
                refusal = "400" if "/personalizer/" in path else "422"
                assert refusal in declared, (method, path)
    for path in ("/v1/models/{name}/predict", "/v1/models/{name}/rank"):
        assert "409" in document["paths"][path]["post"]["responses"], path
