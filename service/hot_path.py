"""Which requests the predict hot path takes (the hot paths live in :mod:`service.hot`)."""

from __future__ import annotations

from starlette.types import Scope

from service.hot.serve import PREDICT_ROUTE, hot_route

__all__ = ["PREDICT_ROUTE", "predict_name"]


def predict_name(scope: Scope) -> str | None:
    """The model name of a predict request the hot path can take, else None."""
    found = hot_route(scope)
    return found[1] if found is not None and found[0] == "predict" else None
