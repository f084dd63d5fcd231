"""The service's domain: the model registry, the model runtimes, recovery, the request
schemas and forms, and the errors the service refuses with (:mod:`service.domain.errors`).

Contract: imports :mod:`service.store` and :mod:`service.telemetry`, never
:mod:`service.http`, :mod:`service.edge`, FastAPI or Starlette.
"""
