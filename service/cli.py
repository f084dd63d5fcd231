"""``banditree serve``: run the service with uvicorn."""

from __future__ import annotations

import fcntl
from pathlib import Path

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

        from service.edge.connection_limits import GuardedHttp
        from service.settings import SettingsError, load_settings

        given = (("host", host), ("port", port), ("workers", workers), ("role", role))
        overrides = {k: v for k, v in given if v is not None}
        try:
            settings = load_settings(**overrides)
        except SettingsError as err:
            typer.echo(str(err), err=True)
            raise typer.Exit(2) from None
        if settings.redis_url is None and data_dir_in_use(settings.data_dir):
            typer.echo(
                f"another banditree process serves {settings.data_dir}; the embedded store is "
                "one process (set BANDITREE_REDIS_URL to run several)",
                err=True,
            )
            raise typer.Exit(2)
        guarded = "limits" not in settings.library_paths
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
            # read deadlines and connection caps (service.edge.connection_limits), which also
            # bound running requests by max_connections: uvicorn's limit_concurrency would
            # count idle sockets and refuse everyone (BANDITREE_LIBRARY_PATHS=limits: it
            # does, to re-measure docs/decisions/0004)
            http=GuardedHttp if guarded else "httptools",
            limit_concurrency=None if guarded else settings.max_connections,
            timeout_keep_alive=settings.keep_alive_timeout_seconds,
            timeout_graceful_shutdown=max(1, round(settings.shutdown_seconds)),
        )


def data_dir_in_use(data_dir: Path | str) -> bool:
    """Whether a process holds the embedded store's lock on ``data_dir`` (checked, released).

    The store takes the same lock when it opens (and refuses then too); checking first
    answers a second ``banditree serve`` with one line instead of uvicorn's traceback.
    """
    lock_path = Path(data_dir) / "banditree.lock"
    if not lock_path.exists():
        return False
    with open(lock_path, "a") as handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        fcntl.flock(handle, fcntl.LOCK_UN)
    return False
