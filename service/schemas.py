"""Request and response bodies, split by direction (``...Create`` in, ``...Public`` out)."""

from __future__ import annotations

from typing import Annotated, Any

import orjson
from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator, model_validator

from banditree.learners import LearnerConfig

#: A JSON number that is finite (``NaN``/``Infinity`` and strings are refused).
FiniteNumber = Annotated[float, Field(strict=True, allow_inf_nan=False)]
#: Largest context length any model accepts (the ``n_features`` bound of a config).
MAX_CONTEXT_LENGTH = 10_000
#: Largest batch the schema parses; the ``max_batch`` setting is usually smaller.
MAX_BATCH_LENGTH = 10_000
Context = Annotated[list[FiniteNumber], Field(max_length=MAX_CONTEXT_LENGTH)]
#: Deepest nesting of lists and objects inside a model's free-form ``options``.
MAX_OPTIONS_DEPTH = 8
#: Largest ``options`` object, in bytes of compact JSON.
MAX_OPTIONS_BYTES = 16_384


def options_depth(value: Any) -> int:
    """Nesting depth of lists and objects in ``value`` (a scalar is 0), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        item, depth = stack.pop()
        children = (
            item.values() if isinstance(item, dict) else item if isinstance(item, list) else None
        )
        if children is None:
            continue
        deepest = max(deepest, depth)
        if deepest > MAX_OPTIONS_DEPTH:
            return deepest  # deep enough to refuse: stop walking
        stack.extend((child, depth + 1) for child in children)
    return deepest


class ModelPolicy(BaseModel):
    """Per-model service settings; unset fields fall back to the server settings."""

    model_config = ConfigDict(extra="forbid", strict=True)

    checkpoint_every_updates: int | None = Field(None, ge=1, le=10**9)
    checkpoint_every_seconds: float | None = Field(None, gt=0.0, le=7 * 86400)
    event_ttl_seconds: float | None = Field(None, gt=0.0, le=7 * 86400)
    default_loss: FiniteNumber | None = None


class ModelCreate(ModelPolicy, LearnerConfig):
    """Body of ``PUT /v1/models/{name}``: the learner config plus the service policy.

    Strict: ``true``, ``"4"`` or ``4.0`` is not an integer; ``options`` is bounded in
    nesting depth and size.
    """

    model_config = ConfigDict(extra="forbid", strict=True)

    options: dict[str, Any] = Field(
        default_factory=dict,
        max_length=64,
        description=(
            f"family-specific settings; at most {MAX_OPTIONS_DEPTH} levels of nesting and "
            f"{MAX_OPTIONS_BYTES} bytes of JSON"
        ),
    )

    @field_validator("options")
    @classmethod
    def _bound_options(cls, value: dict[str, Any]) -> dict[str, Any]:
        depth = options_depth(value)
        if depth > MAX_OPTIONS_DEPTH:
            raise ValueError(f"nesting deeper than {MAX_OPTIONS_DEPTH} levels")
        size = len(orjson.dumps(value))
        if size > MAX_OPTIONS_BYTES:
            raise ValueError(f"{size} bytes of JSON, more than {MAX_OPTIONS_BYTES}")
        return value

    def split(self) -> tuple[LearnerConfig, ModelPolicy]:
        """The learner config and the service policy."""
        policy_fields = set(ModelPolicy.model_fields)
        data = self.model_dump()
        policy = ModelPolicy(**{k: data.pop(k) for k in policy_fields})
        return LearnerConfig.model_validate(data), policy


class ModelCounters(BaseModel):
    predictions: int
    feedback: int
    updates: int
    progressive_mean_loss: float | None


class ModelPublic(BaseModel):
    name: str
    config: dict[str, Any]
    policy: ModelPolicy
    version: int
    counters: ModelCounters
    pending_updates: int = Field(description="accepted feedback not yet applied")


class ModelList(BaseModel):
    models: list[ModelPublic]


class PredictCreate(BaseModel):
    """One ``context`` or a batch of ``contexts``."""

    model_config = ConfigDict(extra="forbid", strict=True)

    context: Context | None = None
    contexts: Annotated[list[Context], Field(max_length=MAX_BATCH_LENGTH)] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> PredictCreate:
        if (self.context is None) == (self.contexts is None):
            raise ValueError("give exactly one of 'context' or 'contexts'")
        return self


class DecisionPublic(BaseModel):
    """One decision: classification fields or regression fields are set."""

    event_id: str
    model_version: int
    leaf: int | None = None
    action: int | None = None
    probability: float | None = None
    greedy_action: int | None = None
    value: float | None = None
    greedy_value: float | None = None
    probes: list[float] | None = None


class DecisionBatchPublic(BaseModel):
    decisions: list[DecisionPublic]


class FeedbackCreate(BaseModel):
    """The loss (or reward) of a decision, or the two losses of a two-point decision."""

    model_config = ConfigDict(extra="forbid", strict=True)

    event_id: str = Field(..., min_length=1, max_length=128)
    loss: FiniteNumber | None = None
    reward: FiniteNumber | None = None
    losses: Annotated[list[FiniteNumber], Field(min_length=2, max_length=2)] | None = None

    @model_validator(mode="after")
    def _one_of(self) -> FeedbackCreate:
        given = [k for k in ("loss", "reward", "losses") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(f"give exactly one of 'loss', 'reward' or 'losses', got {given}")
        return self


class FeedbackPublic(BaseModel):
    status: str
    event_id: str


class CheckpointPublic(BaseModel):
    sequence: int
    version: int
    created_at: float = Field(description="unix time, seconds")
    size_bytes: int


class CheckpointList(BaseModel):
    checkpoints: list[CheckpointPublic]


class RollbackCreate(BaseModel):
    """Body of ``POST .../rollback``: the model version to serve again (an integer, not a bool)."""

    model_config = ConfigDict(extra="forbid", strict=True)

    version: StrictInt = Field(..., ge=0, le=2**63 - 1)


class TreeExport(BaseModel):
    """The served model as JSON, with the version it was exported at."""

    version: int
    model: dict[str, Any]
