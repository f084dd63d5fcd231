"""Model families: DGT hard trees (and forests), linear scorer; TEL and hinge forests.

The names load on first use (PEP 562): the serving families run on numpy, and the torch
modules (:class:`DGTree`, the hinge forests) load only where a caller asks for them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from banditree.core.lazy import lazy_names

if TYPE_CHECKING:
    from banditree.models.dgt.forest_spec import DGTForestSpec
    from banditree.models.dgt.frozen import FrozenTree
    from banditree.models.dgt.spec import DGTSpec
    from banditree.models.dgt.tree import TABLE12_HIDDEN, DGTree, table12_hidden
    from banditree.models.hinge.modules import HingeForest, OnlineStandardize, PooledHingeForest
    from banditree.models.linear import LinearSpec
    from banditree.models.spec import ModelOutput, ModelSpec

_WHERE = {
    "TABLE12_HIDDEN": "banditree.models.dgt.tree",
    "DGTForestSpec": "banditree.models.dgt.forest_spec",
    "DGTSpec": "banditree.models.dgt.spec",
    "DGTree": "banditree.models.dgt.tree",
    "FrozenTree": "banditree.models.dgt.frozen",
    "HingeForest": "banditree.models.hinge.modules",
    "LinearSpec": "banditree.models.linear",
    "ModelOutput": "banditree.models.spec",
    "ModelSpec": "banditree.models.spec",
    "OnlineStandardize": "banditree.models.hinge.modules",
    "PooledHingeForest": "banditree.models.hinge.modules",
    "table12_hidden": "banditree.models.dgt.tree",
}

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

__getattr__ = lazy_names(__name__, _WHERE)
