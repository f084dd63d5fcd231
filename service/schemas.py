"""Request and response bodies, split by direction (``...Create`` in, ``...Public`` out)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from banditree.learners import LearnerConfig

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


class ApprenticePublic(BaseModel):
    """How an apprentice-mode model compares with the caller's default rule."""

    decisions_compared: int
    agreement_rate: float | None = Field(description="its greedy choice = the default, share")
    recent_agreement_rate: float | None = Field(description="the same, over ~500 recent decisions")
    estimated_reward: float | None = Field(description="its predicted reward of its own choice")
    default_estimated_reward: float | None = Field(
        description="its predicted reward of the default"
    )
    default_feedback: int
    default_observed_reward: float | None = Field(description="mean 1 - loss the default earned")


class ModelPublic(BaseModel):
    name: str
    config: dict[str, Any]
    policy: ModelPolicy
    version: int
    counters: ModelCounters
    pending_updates: int = Field(description="accepted feedback not yet applied")
    mode: str = Field("online", description="online (the model decides) or apprentice")
    apprentice: ApprenticePublic | None = None


class ModelUpdate(BaseModel):
    """Body of ``PATCH /v1/models/{name}``."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["online", "apprentice"]


class ModelList(BaseModel):
    models: list[ModelPublic]


class PredictCreate(BaseModel):
    """One ``context`` or a batch of ``contexts``."""

    model_config = ConfigDict(extra="forbid")

    context: Context | None = None
    contexts: Annotated[list[Context], Field(max_length=MAX_BATCH_LENGTH)] | None = None
    default_action: Annotated[int, Field(strict=True, ge=0)] | None = Field(
        None, description="apprentice mode: the action the caller's own rule would play"
    )
    default_actions: (
        Annotated[
            list[Annotated[int, Field(strict=True, ge=0)]], Field(max_length=MAX_BATCH_LENGTH)
        ]
        | None
    ) = Field(None, description="apprentice mode, with 'contexts': one default per context")

    @model_validator(mode="after")
    def _one_of(self) -> PredictCreate:
        if (self.context is None) == (self.contexts is None):
            raise ValueError("give exactly one of 'context' or 'contexts'")
        if self.default_action is not None and self.context is None:
            raise ValueError("'default_action' goes with 'context' (use 'default_actions')")
        if self.default_actions is not None and (
            self.contexts is None or len(self.default_actions) != len(self.contexts)
        ):
            raise ValueError("'default_actions' needs 'contexts' of the same length")
        return self

    def defaults(self) -> list[int] | None:
        """The caller's default actions, one per context, or None."""
        if self.default_action is not None:
            return [self.default_action]
        return self.default_actions


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
