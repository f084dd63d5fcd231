"""Named, typed features (numeric, boolean, categorical, tags; missing values) and their encoder.

The layer sits below ``learners``: a learner with a schema encodes each JSON context
with its :class:`FeatureEncoder` (learner state) before its model reads it.
"""

from banditree.features.encoder import FeatureEncoder, category_key
from banditree.features.errors import InvalidInput
from banditree.features.schema import (
    DEFAULT_MAX_CATEGORIES,
    FeatureSchema,
    FeatureSpec,
    flatten_context,
    infer_schema,
)

__all__ = [
    "DEFAULT_MAX_CATEGORIES",
    "FeatureEncoder",
    "FeatureSchema",
    "FeatureSpec",
    "InvalidInput",
    "category_key",
    "flatten_context",
    "infer_schema",
]
