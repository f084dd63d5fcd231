"""Service settings: one ``BaseSettings`` class, every field from ``BANDITREE_<NAME>``."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator
from pydantic_settings import BaseSettings, NoDecode, SettingsConfigDict

KeyList = Annotated[list[str], NoDecode]
#: what a key may do: predict and feedback; read the log, tree and checkpoints; admin
ROLES = ("predict", "read", "admin")
Role = Literal["predict", "read", "admin"]
#: a hand-built part that ``BANDITREE_LIBRARY_PATHS`` can hand back to its library
LibraryPath = Literal["gc", "redis_wire", "front", "limits"]


def _app_key_roles() -> list[Role]:
    """The default roles of ``BANDITREE_API_KEYS``: predict only."""
    return ["predict"]


class ScopedKey(BaseModel):
    """One entry of ``BANDITREE_SCOPED_KEYS``: a key, its roles and the models they reach."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(min_length=8, max_length=512, pattern=r"^[!-~]+$")
    roles: list[Role] = Field(min_length=1)
    models: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        default_factory=lambda: ["*"],
        min_length=1,
        description="model names or fnmatch patterns ('shop-*'); '*' = every model",
    )


class Settings(BaseSettings):
    """Everything ``banditree serve`` reads from the environment (prefix ``BANDITREE_``).

    A bad value stops the start with a message naming the variable and its bound.
    """

    model_config = SettingsConfigDict(env_prefix="BANDITREE_", extra="ignore")

    redis_url: str | None = Field(None, description="Redis URL; unset = embedded store")
    redis_prefix: str = Field(
        "banditree:", min_length=1, max_length=128, description="prefix of every Redis key"
    )
    redis_timeout_seconds: float = Field(
        0.25,
        gt=0.0,
        le=30.0,
        description="Redis socket timeout: a call gives up after it (then predictions go on "
        "unlogged, feedback gets 503)",
    )
    redis_wait_replicas: int | None = Field(
        None, ge=0, le=16,
        description="replicas a feedback waits for (WAIT) before its 2xx, else 503; "
        "0: none; unset: 1 when the Redis (each cluster master) has a replica, else 0",
    )  # fmt: skip
    redis_wait_timeout_ms: int = Field(
        100, ge=1, le=10_000, description="how long a feedback waits for its replicas"
    )
    store_budget_seconds: float | None = Field(
        None, gt=0.0, le=600.0,
        description="the longest one request waits on the store in all (its Redis calls, a "
        "pooled connection, the lock of its model's name while another request creates, loads "
        "or deletes that model), then 503; a checkpoint request (each look for the learner's "
        "checkpoint) and the log export (each page) get one budget per call; "
        "unset: twice redis_timeout_seconds",
    )  # fmt: skip
    data_dir: Path = Field(
        Path("data"), description="embedded store: holds the SQLite database banditree.sqlite3"
    )
    sqlite_synchronous: Literal["normal", "full"] = Field(
        "normal", description="normal: survives a killed process; full: also a power cut"
    )
    role: Literal["all", "api", "learner"] = Field(
        "all", description="all: serve and learn; api: only serve; learner: only learn"
    )
    lease_seconds: float = Field(
        3.0, ge=0.2, le=600.0, description="learner lease; a dead learner is replaced after it"
    )
    snapshot_poll_seconds: float = Field(
        1.0,
        gt=0.0,
        le=600.0,
        description="serving processes also look for a new snapshot this often (besides "
        "notifications), and pick up models created elsewhere",
    )
    api_keys: KeyList = Field(
        default_factory=list,
        description="comma-separated API keys (the roles of api_key_roles on every model); "
        "none (and no admin key): open, with a warning",
    )
    api_key_roles: list[Role] = Field(
        default_factory=_app_key_roles,
        min_length=1,
        description='JSON list of the roles of BANDITREE_API_KEYS: ["predict"] (predict, '
        'feedback, rank) by default; add "read" to let them export logs (raw contexts), '
        "trees and checkpoint lists of every model",
    )
    admin_keys: KeyList = Field(
        default_factory=list,
        description="comma-separated keys that may also create, delete, checkpoint, roll back "
        "and switch the mode of models",
    )
    checkpoint_every_updates: int = Field(
        1000,
        ge=1,
        le=10**9,
        description="the learner publishes a snapshot (a checkpoint) "
        "after this many parameter updates",
    )
    series_sample_seconds: float = Field(
        5.0,
        ge=0.05,
        le=3600.0,
        description="seconds between two samples of each model's counters for the console's "
        "rates and loss trends (GET /v1/series)",
    )
    checkpoint_every_seconds: float = Field(
        0.2,
        gt=0.0,
        le=7 * 86400,
        description="... or this many seconds after the last one, when it learned something",
    )
    checkpoint_keep: int = Field(
        20,
        ge=1,
        le=100_000,
        description="checkpoints kept per model; the log is trimmed up to the oldest kept one",
    )
    checkpoint_keep_bytes: int = Field(
        256 << 20,
        ge=1,
        le=1 << 50,
        description="bytes the kept checkpoints of one model may take together (the newest "
        "is always kept): fewer than checkpoint_keep are kept when they are larger",
    )
    min_free_bytes: int = Field(
        32 << 20,
        ge=0,
        le=1 << 50,
        description="embedded store: free bytes its file system keeps for decisions and "
        "feedback; under it /readyz answers 503 and checkpoints wait (0: no guard)",
    )
    scoped_keys: list[ScopedKey] = Field(
        default_factory=list,
        description='JSON list of keys limited to roles and models: [{"key": "...", "roles": '
        '["predict", "read", "admin"], "models": ["shop-*", "news"]}] (models: names or fnmatch '
        "patterns, default every model)",
    )
    personalizer_model: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="the model Personalizer's root routes (/personalizer/...) serve to a key "
        "that reaches more than one model; a key scoped to one model uses that one",
    )
    metrics_key: str | None = Field(
        None,
        min_length=8,
        description="/metrics needs this key as a bearer token (an admin key also passes); "
        "unset, /metrics needs an admin key when any key is configured, else is open",
    )
    event_ttl_seconds: float = Field(600.0, gt=0.0, le=7 * 86400, description="reward wait time")
    default_loss: float | None = Field(None, description="loss applied when an event expires")
    sweep_interval_seconds: float = Field(
        1.0, gt=0.0, le=3600, description="how often expired decisions are handled"
    )
    shutdown_seconds: float = Field(
        10.0, gt=0.0, le=600.0, description="longest graceful stop (requests, then learners)"
    )
    max_body_bytes: int = Field(
        1_048_576, ge=1024, le=1 << 30, description="larger request bodies get 413"
    )
    max_batch: int = Field(256, ge=1, le=10_000, description="more contexts in one predict get 413")
    max_models: int = Field(
        10_000, ge=1, le=1_000_000, description="models one process serves; more get 409"
    )
    max_resident_models: int = Field(
        0, ge=0, le=1_000_000,
        description="models whose objects one process keeps in memory: past it, the least "
        "recently used idle ones are let go (served and learned again from the store on "
        "their next use); 0: no bound.  Models are loaded on first use, never at start",
    )  # fmt: skip
    metrics_max_models: int = Field(
        1000, ge=0, le=1_000_000,
        description="models with /metrics series of their own; the others' counters and "
        'histograms add up under model="_other" and their gauges are not exported',
    )  # fmt: skip
    max_export_bytes: int = Field(
        64 << 20, ge=1024, le=1 << 34, description="largest tree export answer; larger get 413"
    )
    keep_alive_timeout_seconds: int = Field(
        5, ge=1, le=3600, description="idle keep-alive connections are closed after it"
    )
    header_timeout_seconds: float = Field(
        10.0, gt=0.0, le=3600.0, description="a connection without complete headers is closed"
    )
    body_timeout_seconds: float = Field(
        10.0, gt=0.0, le=3600.0, description="a request body not complete this long is cut (408)"
    )
    max_connections: int = Field(
        1000,
        ge=1,
        le=1_000_000,
        description="open connections per process, and running requests: a connection over it "
        "displaces the longest-waiting connection that is idle or still sending headers or a "
        "body, if that one has waited 1 s (0.05 s for a request with a configured key); "
        "otherwise its request is answered 503 with Retry-After: 1 (a burst over the cap is "
        "served up to it)",
    )
    max_connections_per_peer: int = Field(
        0, ge=0, le=1_000_000, description="open connections from one client address; 0 = no cap"
    )
    host: str = Field("127.0.0.1", description="bind address of banditree serve")
    port: int = Field(8000, ge=1, le=65535, description="port of banditree serve")
    workers: int = Field(
        1, ge=1, le=64, description="serving processes of banditree serve (more than 1 needs Redis)"
    )
    log_level: Literal["critical", "error", "warning", "info", "debug"] = Field(
        "info", description="the service's log level"
    )
    access_log: bool = Field(
        False,
        description="one JSON line per request on standard output (time, method, path, "
        "status, duration_ms, client); off by default: a log line per decision costs throughput",
    )
    opentelemetry: bool = Field(
        False,
        description="FastAPI's native OpenTelemetry (spans, metrics and logs to the global "
        "providers); off, a request skips its per-request check of those providers",
    )
    library_paths: Annotated[list[LibraryPath], NoDecode] = Field(
        default_factory=list,
        description="hand-built parts run on the library's own path instead, to re-measure "
        "them (comma-separated): 'gc' no new model's objects frozen (CPython's collector "
        "as it comes), 'redis_wire' redis-py's asyncio client for the requests' Redis calls, "
        "'front' FastAPI's routes for predict, feedback and rank, 'limits' uvicorn's own "
        "httptools protocol and limit_concurrency (docs/decisions)",
    )

    @field_validator("api_keys", "admin_keys", "library_paths", mode="before")
    @classmethod
    def _split_keys(cls, value: object) -> object:
        if isinstance(value, str):
            return [key.strip() for key in value.split(",") if key.strip()]
        return value

    @field_validator("metrics_key", "personalizer_model", mode="before")
    @classmethod
    def _empty_metrics_key(cls, value: object) -> object:
        return None if value == "" else value  # compose passes an unset variable as ""

    @field_validator("redis_url")
    @classmethod
    def _check_redis_url(cls, value: str | None) -> str | None:
        if value in (None, ""):
            return None
        assert value is not None
        if not value.startswith(("redis://", "rediss://", "unix://")):
            raise ValueError("must start with redis://, rediss:// or unix://")
        return value

    @field_validator("default_loss")
    @classmethod
    def _check_default_loss(cls, value: float | None) -> float | None:
        if value is not None and not math.isfinite(value):
            raise ValueError("must be a finite number")
        return value

    @model_validator(mode="after")
    def _check_workers(self) -> Settings:
        if self.workers > 1 and self.redis_url is None:
            raise ValueError(
                "workers > 1 needs BANDITREE_REDIS_URL: the embedded store is per process"
            )
        if self.role != "all" and self.redis_url is None:
            raise ValueError(
                f"role {self.role} needs BANDITREE_REDIS_URL: with the embedded store one "
                "process serves and learns (role all)"
            )
        if self.redis_wait_timeout_ms >= self.redis_timeout_seconds * 1000:
            raise ValueError(
                f"redis_wait_timeout_ms ({self.redis_wait_timeout_ms}) must be below "
                f"redis_timeout_seconds ({self.redis_timeout_seconds} s): the WAIT is one call"
            )
        return self

    @model_validator(mode="after")
    def _check_unique_keys(self) -> Settings:
        keys = [*self.api_keys, *self.admin_keys, *(k.key for k in self.scoped_keys)]
        if len(set(keys)) != len(keys):
            raise ValueError("a key is listed twice (API, admin or scoped keys): give it once")
        return self

    @property
    def auth_enabled(self) -> bool:
        return bool(self.api_keys or self.admin_keys or self.scoped_keys)


class SettingsError(ValueError):
    """A setting that stops the start; the message names the environment variable."""


def load_settings(**overrides: Any) -> Settings:
    """Settings from the environment (and ``overrides``), or :class:`SettingsError`."""
    try:
        return Settings(**overrides)
    except ValidationError as err:
        lines = []
        for error in err.errors():
            head, *rest = [str(part) for part in error["loc"]] or [""]
            where = "".join(f"[{p}]" if p.isdigit() else f".{p}" for p in rest)
            variable = f"BANDITREE_{head.upper()}{where}" if head else "settings"
            lines.append(f"{variable}: {error['msg']}")
        raise SettingsError("invalid setting: " + "; ".join(lines)) from None
