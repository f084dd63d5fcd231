"""The ``options`` of a ranking model (``task: ranking``), validated with its config.

A ranking model scores each candidate from the request's context and the candidate's
own features, both JSON objects of named features (:mod:`banditree.features`).  Their
schemas may be declared here; otherwise each is inferred from the first decision the
model learns from (log order, so every replica and every replay infers the same one),
with ``max_categories`` vocabulary slots per categorical feature.
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from banditree.features import FeatureSchema

#: most encoded columns of the context, and of a candidate's features
MAX_SIDE_WIDTH = 1024
#: the context x candidate crosses are on (``crosses`` null) up to this many ridge features:
#: the ridge's state grows as their square
AUTO_CROSS_FEATURES = 1024
#: vocabulary slots of an inferred categorical feature of a ranking model (the crosses'
#: width grows with the product of the two sides' columns)
RANKING_MAX_CATEGORIES = 8
#: the tree's per-id ramp by default (``benchmarks.quality.ranking_vs_vw``)
ID_RAMP = 5.0


class RankingOptions(BaseModel):
    """``options`` of a ``task: ranking`` config; every field optional."""

    model_config = ConfigDict(extra="forbid")

    context_features: FeatureSchema | None = Field(
        None, description="schema of the context; null: inferred from the first decision learned"
    )
    action_features: FeatureSchema | None = Field(
        None,
        description="schema of a candidate's features; null: inferred from the first decision learned",
    )
    max_categories: int = Field(
        RANKING_MAX_CATEGORIES,
        ge=1,
        le=256,
        description="vocabulary slots of each inferred categorical or tags feature",
    )
    crosses: bool | None = Field(
        None,
        description=(
            "context x candidate crosses in the ridge; null: on while the ridge has at most "
            f"{AUTO_CROSS_FEATURES} features"
        ),
    )
    tree: bool = Field(
        True, description="a hard tree over (context, candidate) learns the residual"
    )
    ridge_l2: float = Field(1.0, gt=0.0, le=1e6, description="the ridge's penalty")
    context_clip: float = Field(3.0, gt=0.0, le=1e6, description="clip of standardised features")
    id_ramp: float = Field(
        ID_RAMP,
        ge=0.0,
        le=1e6,
        description=(
            "plays an id needs before the tree's term applies in full: a candidate's tree "
            "term is scaled by n / (n + id_ramp), n its id's plays, so an id never played is "
            "scored by the ridge alone (cold start); 0: the tree for every candidate"
        ),
    )

    def check_widths(self) -> None:
        """Refuse declared schemas wider than :data:`MAX_SIDE_WIDTH` encoded columns."""
        for name in ("context_features", "action_features"):
            schema = getattr(self, name)
            if schema is not None and schema.width > MAX_SIDE_WIDTH:
                raise ValueError(
                    f"options.{name}: {schema.width} encoded columns, more than {MAX_SIDE_WIDTH}"
                )
