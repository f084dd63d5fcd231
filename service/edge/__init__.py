"""The ASGI front: what a request meets before FastAPI, and the fast paths.

:class:`~service.edge.app.ServiceApp` is the service's app: FastAPI with every route,
the OpenAPI document and the docs, behind one front layer
(:class:`~service.edge.app.ServiceHttp`: API keys, body bound, metrics, access
log) that answers predict, feedback and rank itself (:mod:`service.edge.serve`, bodies
checked by :mod:`service.edge.serve`) and hands every other request to FastAPI.

Contract: the edge may import :mod:`service.http` (the operations and the error answers
it shares with the routes), :mod:`service.domain`, :mod:`service.store` and
:mod:`service.telemetry`; nothing below imports the edge.
"""
