"""``banditree serve``: run the service with uvicorn."""

from __future__ import annotations

import typer


def register(app: typer.Typer) -> None:
    """Add the ``serve`` command to the ``banditree`` console app."""

    @app.command()
    def serve(
        host: str | None = typer.Option(None, help="bind address [BANDITREE_HOST, 127.0.0.1]"),
        port: int | None = typer.Option(None, help="TCP port [BANDITREE_PORT, 8000]"),
        workers: int | None = typer.Option(
            None, help="worker processes; more than 1 needs Redis [BANDITREE_WORKERS, 1]"
        ),
        role: str | None = typer.Option(
            None,
            help="all: serve and learn; api: only serve; learner: only learn (api and "
            "learner need Redis) [BANDITREE_ROLE, all]",
        ),
    ) -> None:
        """Serve predict/feedback over HTTP (settings from BANDITREE_* variables).

        With --workers N (Redis) every worker serves every model and exactly one
        process learns each model, under a lease.
        """
        import os

        import uvicorn

        from service.connection_limits import HeaderDeadline
        from service.settings import SettingsError, load_settings

        given = (("host", host), ("port", port), ("workers", workers), ("role", role))
        overrides = {k: v for k, v in given if v is not None}
        try:
            settings = load_settings(**overrides)
        except SettingsError as err:
            typer.echo(str(err), err=True)
            raise typer.Exit(2) from None
        for key, value in overrides.items():  # worker processes read the environment
            os.environ[f"BANDITREE_{key.upper()}"] = str(value)
        uvicorn.run(
            "service.main:create_app_from_env",
            factory=True,
            host=settings.host,
            port=settings.port,
            workers=settings.workers,
            log_level=settings.log_level,
            # uvloop and httptools when installed (uvicorn[standard]), else asyncio and h11
            loop="auto",
            # uvicorn's text access log stays off: BANDITREE_ACCESS_LOG turns on the
            # service's own JSON lines (one per request)
            access_log=False,
            http=HeaderDeadline,  # closes connections whose headers never complete
            timeout_keep_alive=settings.keep_alive_timeout_seconds,
            limit_concurrency=settings.max_connections,
            timeout_graceful_shutdown=max(1, round(settings.shutdown_seconds)),
        )
