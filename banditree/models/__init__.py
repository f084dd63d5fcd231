"""Model families: DGT hard trees (and forests), linear scorer; TEL and hinge forests."""

from banditree.models.dgt import TABLE12_HIDDEN, DGTree, table12_hidden
from banditree.models.dgt_spec import DGTSpec
from banditree.models.forest_spec import DGTForestSpec
from banditree.models.frozen import FrozenTree
from banditree.models.linear import LinearSpec
from banditree.models.smooth_step import SmoothStep, smooth_step
from banditree.models.spec import ModelOutput, ModelSpec
from banditree.models.tel import TEL
from banditree.models.tel_dense import dense_tree_ensemble
from banditree.models.tel_function import tree_ensemble

__all__ = [
    "TABLE12_HIDDEN",
    "TEL",
    "DGTForestSpec",
    "DGTSpec",
    "DGTree",
    "FrozenTree",
    "LinearSpec",
    "ModelOutput",
    "ModelSpec",
    "SmoothStep",
    "dense_tree_ensemble",
    "smooth_step",
    "table12_hidden",
    "tree_ensemble",
]
