"""List the import cycles among the project's modules (``python -m tools.import_cycles``).

Builds the import graph with grimp (every import, those under ``if TYPE_CHECKING:`` and
inside functions included) and prints every strongly connected component of more than
one module.  Exits 1 when there is any.
"""

from __future__ import annotations

import importlib.util
import sys

import grimp
import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import connected_components

PACKAGES = ("banditree", "banditree_cli", "service", "simulate")


def components(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (scipy's csgraph)."""
    modules = sorted(graph.modules)
    position = {name: i for i, name in enumerate(modules)}
    edges = [
        (position[a], position[b])
        for a in modules
        for b in graph.find_modules_directly_imported_by(a)
        if b in position
    ]
    rows, cols = zip(*edges, strict=True) if edges else ((), ())
    matrix = csr_matrix((np.ones(len(edges)), (rows, cols)), shape=(len(modules),) * 2)
    count, labels = connected_components(matrix, directed=True, connection="strong")
    members: list[list[str]] = [[] for _ in range(count)]
    for name, label in zip(modules, labels, strict=True):
        members[label].append(name)
    return sorted(group for group in members if len(group) > 1)


def main() -> int:
    packages = [p for p in PACKAGES if importlib.util.find_spec(p) is not None]
    graph = grimp.build_graph(*packages, exclude_type_checking_imports=False, cache_dir=None)
    cycles = components(graph)
    for members in cycles:
        print(f"cycle of {len(members)} modules: {', '.join(members)}")
    print(f"{len(cycles)} import cycle(s) among {len(graph.modules)} modules of {packages}")
    return 1 if cycles else 0


if __name__ == "__main__":
    sys.exit(main())
