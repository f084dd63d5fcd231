"""The service's hot paths, answered in the app's outermost ASGI layer, before FastAPI.

:class:`~service.hot.app.ServiceApp` is the service's app: FastAPI with every route,
the OpenAPI document and the docs, behind one front layer
(:class:`~service.http_middleware.ServiceHttp`: API keys, body bound, metrics, access
log) that answers predict, feedback and rank itself (:mod:`service.hot.serve`, bodies
checked by :mod:`service.hot.parse`) and hands every other request to FastAPI.
"""
