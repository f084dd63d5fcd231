"""Model families: DGT hard trees (and forests), linear scorer; TEL and hinge forests."""

from banditree.models.dgt import TABLE12_HIDDEN, DGTree, table12_hidden
from banditree.models.dgt_spec import DGTSpec
from banditree.models.forest_spec import DGTForestSpec
from banditree.models.frozen import FrozenTree
from banditree.models.linear import LinearSpec
from banditree.models.spec import ModelOutput, ModelSpec

__all__ = [
    "TABLE12_HIDDEN",
    "DGTForestSpec",
    "DGTSpec",
    "DGTree",
    "FrozenTree",
    "LinearSpec",
    "ModelOutput",
    "ModelSpec",
    "table12_hidden",
]
