"""Request and response bodies, split by direction (``...Create`` in, ``...Public`` out).

The routes validate bodies with these pydantic models; the fast front builds the plain
:class:`PredictBody`, :class:`FeedbackBody` and :class:`RankBody` (at the end) from
bodies these models would accept as they stand.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Annotated, Any, Literal

import orjson
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    ValidatorFunctionWrapHandler,
    WithJsonSchema,
    WrapValidator,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from banditree.learners import LearnerConfig
from banditree.learners.config import defaults as config_defaults
from banditree.learners.config import rules as config_rules
from banditree.models.dgt.trained import MAX_FILE_BYTES, base64_length
from service.domain.schema_parts import (
    MAX_OPTIONS_DEPTH,
    exactly_one_of,
    flat_fields,
    one_of_schema,
    options_depth,
)

#: A JSON number that is finite (``NaN``/``Infinity`` and strings are refused).
FiniteNumber = Annotated[float, Field(strict=True, allow_inf_nan=False)]
#: Largest context length any model accepts (the ``n_features`` bound of a config).
MAX_CONTEXT_LENGTH = 10_000
#: Largest batch the schema parses; the ``max_batch`` setting is usually smaller.
MAX_BATCH_LENGTH = 10_000
NumberContext = Annotated[list[FiniteNumber], Field(max_length=MAX_CONTEXT_LENGTH)]
#: longest event id a caller may give (predict's ``event_id``, rank's, Personalizer's
#: ``eventId``)
MAX_GIVEN_EVENT_ID = 100
#: what an event id a caller gives is made of: letters, digits and ``. _ ~ : -`` (a
#: GUID, a ULID, ``order-17:1``), so that it stands unescaped in a URL path
#: (``/events/{event_id}/activate``) and never holds the ``#`` of multi-slot ids
GIVEN_EVENT_ID_PATTERN = rf"^[A-Za-z0-9._~:-]{{1,{MAX_GIVEN_EVENT_ID}}}$"
_GIVEN = re.compile(GIVEN_EVENT_ID_PATTERN)
#: the refusal's words
GIVEN_EVENT_ID_RULE = f"1 to {MAX_GIVEN_EVENT_ID} characters, letters, digits and . _ ~ : - only"


def given_event_id_ok(value: object) -> bool:
    """Whether ``value`` is an event id a caller may give."""
    return type(value) is str and _GIVEN.fullmatch(value) is not None


def _named_or_numbers(value: Any, numbers: ValidatorFunctionWrapHandler) -> Any:
    """An object of named features passes as it is (the model's encoder checks it and
    names a bad field); anything else is validated as a list of numbers."""
    if isinstance(value, dict):
        if len(value) > MAX_CONTEXT_LENGTH:
            raise PydanticCustomError(
                "too_long", "must hold at most {n} named features", {"n": MAX_CONTEXT_LENGTH}
            )
        return value
    return numbers(value)


#: A context: a list of numbers, or, for a model with a feature schema, an object of
#: named features (``{"age": 31, "country": "DE", "user": {...}}``).
Context = Annotated[
    NumberContext,
    WrapValidator(_named_or_numbers),
    WithJsonSchema(
        {
            "anyOf": [
                {"type": "array", "items": {"type": "number"}, "maxItems": MAX_CONTEXT_LENGTH},
                {"type": "object", "maxProperties": MAX_CONTEXT_LENGTH},
            ]
        }
    ),
]
#: Largest ``options`` object, in bytes of compact JSON.
MAX_OPTIONS_BYTES = 16_384


class ModelPolicy(BaseModel):
    """Per-model service settings; unset fields fall back to the server settings."""

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

    checkpoint_every_updates: int | None = Field(None, ge=1, le=10**9)
    checkpoint_every_seconds: float | None = Field(None, gt=0.0, le=7 * 86400)
    event_ttl_seconds: float | None = Field(None, gt=0.0, le=7 * 86400)
    default_loss: FiniteNumber | None = None


if TYPE_CHECKING:  # the fields of both, as flat_fields builds them at import

    class ModelFields(LearnerConfig, ModelPolicy): ...

else:
    ModelFields = flat_fields("ModelFields", LearnerConfig, ModelPolicy)


class ModelCreate(ModelFields):
    """Body of ``PUT /v1/models/{name}``: a learner config, the service policy, a warm start.

    Flat on the wire (every field of :class:`LearnerConfig` and :class:`ModelPolicy`
    side by side); :meth:`split` gives the two records.  Strict: ``true``, ``"4"`` or
    ``4.0`` is not an integer; ``options`` is bounded in nesting depth and size.
    """

    model_config = ConfigDict(extra="forbid", strict=True, allow_inf_nan=False)

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

    initial_model: str | None = Field(
        None,
        max_length=base64_length(MAX_FILE_BYTES),
        description="base64 of a 'banditree train' model.safetensors: the model starts from it",
    )

    @model_validator(mode="before")
    @classmethod
    def _fills(cls, data: Any) -> Any:
        # n_features 1 for a ranking model; with features: n_features derived
        return config_defaults.feature_width(config_defaults.ranking_fills(data))

    @model_validator(mode="after")
    def _config_rules(self) -> ModelCreate:
        config_rules.check(self)  # the config's rules across fields, with its messages
        return self

    def split(self) -> tuple[LearnerConfig, ModelPolicy]:
        """The learner config and the service policy, each holding the fields the body set
        (so that :meth:`LearnerConfig.for_initial_model` sees an unnamed ``kind``)."""
        data = self.model_dump(exclude={"initial_model"}, exclude_unset=True)
        policy = ModelPolicy(**{k: data.pop(k) for k in ModelPolicy.model_fields if k in data})
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


class ModelStatus(BaseModel):
    """The model's state in the serving process, as of the last gauge refresh (the
    ``/metrics`` gauges' values)."""

    pending_decisions: int | None = Field(
        description="decisions awaiting feedback (null: not read yet)"
    )
    checkpoint_age_seconds: float | None = Field(
        description="since the served snapshot was written"
    )
    learner_holder: str | None = Field(description="the process holding the learner lease")


class ModelPublic(BaseModel):
    name: str
    config: dict[str, Any]
    policy: ModelPolicy
    version: int
    counters: ModelCounters
    pending_updates: int = Field(description="accepted feedback not yet applied")
    mode: str = Field("online", description="online (the model decides) or apprentice")
    apprentice: ApprenticePublic | None = None
    status: ModelStatus | None = None


class ModelUpdate(BaseModel):
    """Body of ``PATCH /v1/models/{name}``."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["online", "apprentice"]


class ModelList(BaseModel):
    models: list[ModelPublic]


PREDICT_ALTERNATIVES = ("context", "contexts")
#: an event id a caller gives (:data:`GIVEN_EVENT_ID_PATTERN`)
GivenEventId = Annotated[
    str, Field(min_length=1, max_length=MAX_GIVEN_EVENT_ID, pattern=GIVEN_EVENT_ID_PATTERN)
]
FEEDBACK_ALTERNATIVES = ("loss", "reward", "losses")


class PredictCreate(BaseModel):
    """One ``context`` or a batch of ``contexts``."""

    model_config = ConfigDict(
        extra="forbid", strict=True, json_schema_extra=one_of_schema(PREDICT_ALTERNATIVES)
    )

    context: Context | None = Field(
        None, description="a list of numbers, or an object of named features (models with features)"
    )
    contexts: Annotated[list[Context], Field(max_length=MAX_BATCH_LENGTH)] | None = None
    default_action: Annotated[int, Field(strict=True, ge=0)] | None = Field(
        None, description="apprentice mode: the action the caller's own rule would play"
    )
    explain: bool = Field(
        False,
        description=(
            "models with features whose kind is dgt or boosted: each decision also gets "
            "'explanation', its leaf's path as named conditions (a list of strings, root "
            "first); a boosted model's is its online tree's path, and 'explained_by' says "
            "so, with the ensemble's weight in the blend the decision read (ensemble_weight)"
        ),
    )
    default_actions: (
        Annotated[
            list[Annotated[int, Field(strict=True, ge=0)]], Field(max_length=MAX_BATCH_LENGTH)
        ]
        | None
    ) = Field(None, description="apprentice mode, with 'contexts': one default per context")
    event_id: GivenEventId | None = Field(
        None,
        description=(
            "with 'context': the decision's id (Personalizer's eventId; null: a new one). "
            "A predict sent again with the same id is answered with the decision stored "
            "the first time, counted once; 409 once that decision's feedback was taken "
            "or its reward wait is over"
        ),
    )
    event_ids: Annotated[list[GivenEventId], Field(max_length=MAX_BATCH_LENGTH)] | None = Field(
        None, description="with 'contexts': one distinct id per context, as event_id"
    )

    @model_validator(mode="before")
    @classmethod
    def _one_of(cls, data: Any) -> Any:
        return exactly_one_of(data, PREDICT_ALTERNATIVES)

    @model_validator(mode="after")
    def _defaults_match(self) -> PredictCreate:
        if self.default_action is not None and self.context is None:
            raise ValueError("'default_action' goes with 'context' (use 'default_actions')")
        if self.default_actions is not None and (
            self.contexts is None or len(self.default_actions) != len(self.contexts)
        ):
            raise ValueError("'default_actions' needs 'contexts' of the same length")
        if self.event_id is not None and self.context is None:
            raise ValueError("'event_id' goes with 'context' (use 'event_ids')")
        if self.event_ids is not None and (
            self.contexts is None or len(self.event_ids) != len(self.contexts)
        ):
            raise ValueError("'event_ids' needs 'contexts' of the same length")
        if self.event_ids is not None and len(set(self.event_ids)) != len(self.event_ids):
            raise ValueError("'event_ids' must be distinct")
        return self

    def given_event_ids(self) -> list[str] | None:
        """The caller's event ids, one per context, or None."""
        if self.event_id is not None:
            return [self.event_id]
        return self.event_ids

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

    model_config = ConfigDict(
        extra="forbid", strict=True, json_schema_extra=one_of_schema(FEEDBACK_ALTERNATIVES)
    )

    event_id: str = Field(..., min_length=1, max_length=128)
    loss: FiniteNumber | None = None
    reward: FiniteNumber | None = None
    losses: Annotated[list[FiniteNumber], Field(min_length=2, max_length=2)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _one_of(cls, data: Any) -> Any:
        return exactly_one_of(data, FEEDBACK_ALTERNATIVES)


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

    # the largest integer every JSON reader holds exactly (2^53 - 1): a client or a schema
    # tool reading the bound as a float cannot round a larger version under it
    version: StrictInt = Field(..., ge=0, le=2**53 - 1)


class TreeExport(BaseModel):
    """The served model as JSON, with the version it was exported at."""

    version: int
    model: dict[str, Any]


# The checked request bodies the operations take from the fast front:
# :mod:`service.edge.serve` builds them from a body ``orjson`` parsed, when the schema
# would take it as it stands; the routes take the schema's own models (above, and
# :class:`~service.http.routes.ranking.RankCreate`).  Plain slotted classes: no
# pydantic model per request.


class PredictBody:
    """A checked predict body: one ``context`` or a batch of ``contexts``, the defaults."""

    __slots__ = ("context", "contexts", "default_action", "default_actions", "event_ids")
    #: the hot path takes no ``explain`` (such a body goes to the route)
    explain = False

    def __init__(
        self,
        context: list[float] | None,
        contexts: list[list[float]] | None,
        default_action: int | None,
        default_actions: list[int] | None,
        event_ids: list[str] | None = None,
    ) -> None:
        self.context = context
        self.contexts = contexts
        self.default_action = default_action
        self.default_actions = default_actions
        self.event_ids = event_ids

    def defaults(self) -> list[int] | None:
        """The caller's default actions, one per context, or None."""
        if self.default_action is not None:
            return [self.default_action]
        return self.default_actions

    def given_event_ids(self) -> list[str] | None:
        """The caller's event ids (``event_id`` or ``event_ids``), one per context, or None."""
        return self.event_ids


class FeedbackBody:
    """A checked feedback body: the event id and exactly one of loss, reward or losses."""

    __slots__ = ("event_id", "loss", "losses", "reward")

    def __init__(
        self,
        event_id: str,
        loss: float | None,
        reward: float | None,
        losses: tuple[float, float] | None,
    ) -> None:
        self.event_id = event_id
        self.loss = loss
        self.reward = reward
        self.losses = losses


class RankBody:
    """A checked rank body: the context, ``(id, features)`` of each candidate, the
    excluded ids, the caller's event id and whether activation is deferred."""

    __slots__ = ("actions", "context", "defer_activation", "event_id", "excluded_actions")

    def __init__(
        self,
        context: Any,
        actions: list[tuple[str, Any]],
        excluded_actions: list[str],
        event_id: str | None,
        defer_activation: bool,
    ) -> None:
        self.context = context
        self.actions = actions
        self.excluded_actions = excluded_actions
        self.event_id = event_id
        self.defer_activation = defer_activation
