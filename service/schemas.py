"""Request and response bodies, split by direction (``...Create`` in, ``...Public`` out)."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from banditree.learners import LearnerConfig
from banditree.supervised.model_file import MAX_FILE_BYTES, base64_length

#: A JSON number that is finite (``NaN``/``Infinity`` and strings are refused).
FiniteNumber = Annotated[float, Field(strict=True, allow_inf_nan=False)]
#: Largest context length any model accepts (the ``n_features`` bound of a config).
MAX_CONTEXT_LENGTH = 10_000
#: Largest batch the schema parses; the ``max_batch`` setting is usually smaller.
MAX_BATCH_LENGTH = 10_000
Context = Annotated[list[FiniteNumber], Field(max_length=MAX_CONTEXT_LENGTH)]


class ModelPolicy(BaseModel):
    """Per-model service settings; unset fields fall back to the server settings."""

    model_config = ConfigDict(extra="forbid")

    checkpoint_every_updates: int | None = Field(None, ge=1, le=10**9)
    checkpoint_every_seconds: float | None = Field(None, gt=0.0, le=7 * 86400)
    event_ttl_seconds: float | None = Field(None, gt=0.0, le=7 * 86400)
    default_loss: FiniteNumber | None = None


class ModelCreate(ModelPolicy, LearnerConfig):
    """Body of ``PUT /v1/models/{name}``: the learner config plus the service policy."""

    initial_model: str | None = Field(
        None,
        max_length=base64_length(MAX_FILE_BYTES),
        description="base64 of a 'banditree train' model.safetensors: the model starts from it",
    )

    def split(self) -> tuple[LearnerConfig, ModelPolicy]:
        """The learner config and the service policy."""
        policy_fields = set(ModelPolicy.model_fields)
        data = self.model_dump(exclude={"initial_model"})
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

    model_config = ConfigDict(extra="forbid")

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

    model_config = ConfigDict(extra="forbid")

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
    model_config = ConfigDict(extra="forbid")

    version: int = Field(..., ge=0)
