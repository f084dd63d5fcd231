"""A Python client of ``banditree serve``: :class:`Client` (blocking) and :class:`AsyncClient`.

Typed results, an API key, timeouts, and retries with backoff on 503 and connection
errors.  Feedback is safe to retry: the service answers a repeat with 409, which the
client reports as ``already_accepted``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from banditree.core.lazy import lazy_names

if TYPE_CHECKING:
    from banditree.client.async_client import AsyncClient
    from banditree.client.errors import BanditreeError, ServiceUnavailable
    from banditree.client.results import (
        CheckpointResult,
        FeedbackResult,
        ModelInfo,
        PredictResult,
        RankResult,
    )
    from banditree.client.sync_client import Client
    from banditree.client.wire import RetryPolicy

# the ``banditree`` console command imports this package for its client commands:
# httpx and the clients load when first used
_WHERE = {
    "AsyncClient": "banditree.client.async_client",
    "BanditreeError": "banditree.client.errors",
    "CheckpointResult": "banditree.client.results",
    "Client": "banditree.client.sync_client",
    "FeedbackResult": "banditree.client.results",
    "ModelInfo": "banditree.client.results",
    "PredictResult": "banditree.client.results",
    "RankResult": "banditree.client.results",
    "RetryPolicy": "banditree.client.wire",
    "ServiceUnavailable": "banditree.client.errors",
}

__all__ = [
    "AsyncClient",
    "BanditreeError",
    "CheckpointResult",
    "Client",
    "FeedbackResult",
    "ModelInfo",
    "PredictResult",
    "RankResult",
    "RetryPolicy",
    "ServiceUnavailable",
]

__getattr__ = lazy_names(__name__, _WHERE)
