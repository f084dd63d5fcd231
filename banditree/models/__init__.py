"""Model families: DGT hard trees (and forests), linear scorer; TEL and hinge forests."""

from banditree.models.dgt.forest_spec import DGTForestSpec
from banditree.models.dgt.frozen import FrozenTree
from banditree.models.dgt.spec import DGTSpec
from banditree.models.dgt.tree import TABLE12_HIDDEN, DGTree, table12_hidden
from banditree.models.hinge.modules import HingeForest, OnlineStandardize, PooledHingeForest
from banditree.models.linear import LinearSpec
from banditree.models.spec import ModelOutput, ModelSpec

__all__ = [
    "TABLE12_HIDDEN",
    "DGTForestSpec",
    "DGTSpec",
    "DGTree",
    "FrozenTree",
    "HingeForest",
    "LinearSpec",
    "ModelOutput",
    "ModelSpec",
    "OnlineStandardize",
    "PooledHingeForest",
    "table12_hidden",
]
