"""The FastAPI layer: routes (:mod:`service.http.routes`), dependencies, the error bodies
and their OpenAPI entries, the docs page.

Contract: imports :mod:`service.domain`, :mod:`service.store` and
:mod:`service.telemetry`, never :mod:`service.edge`.
"""
