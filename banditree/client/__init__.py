"""A Python client of ``banditree serve``: :class:`Client` (blocking) and :class:`AsyncClient`.

Typed results, an API key, timeouts, and retries with backoff on 503 and connection
errors.  Feedback is safe to retry: the service answers a repeat with 409, which the
client reports as ``already_accepted``.
"""

from banditree.client.async_client import AsyncClient
from banditree.client.errors import BanditreeError, ServiceUnavailable
from banditree.client.results import CheckpointResult, FeedbackResult, ModelInfo, PredictResult
from banditree.client.sync_client import Client
from banditree.client.wire import RetryPolicy

__all__ = [
    "AsyncClient",
    "BanditreeError",
    "CheckpointResult",
    "Client",
    "FeedbackResult",
    "ModelInfo",
    "PredictResult",
    "RetryPolicy",
    "ServiceUnavailable",
]
