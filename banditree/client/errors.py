"""Errors the client raises: the service's answer (status, detail, field) or no answer."""

from __future__ import annotations


class BanditreeError(Exception):
    """The service refused a request: ``status``, its ``detail`` message and the ``field``."""

    def __init__(self, status: int, detail: str, field: str | None = None) -> None:
        super().__init__(f"HTTP {status}: {detail}" + (f" (field {field})" if field else ""))
        self.status = status
        self.detail = detail
        self.field = field


class ServiceUnavailable(BanditreeError):
    """No usable answer after every retry (503, or the connection failed)."""
