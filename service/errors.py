"""Errors the service answers with a 4xx/503 and a message naming the field and the bound."""

from __future__ import annotations


class ServiceError(Exception):
    """An HTTP answer other than success: ``status``, a ``detail`` message, the ``field``."""

    def __init__(self, status: int, detail: str, field: str | None = None) -> None:
        super().__init__(detail)
        self.status = status
        self.detail = detail
        self.field = field


def model_not_found(name: str) -> ServiceError:
    return ServiceError(404, f"model {name!r} does not exist", "name")
