"""List the import cycles among the project's modules (``python -m tools.import_cycles``).

Builds the import graph with grimp (every import, those under ``if TYPE_CHECKING:`` and
inside functions included) and prints every strongly connected component of more than
one module.  Exits 1 when there is any.
"""

from __future__ import annotations

import importlib.util
import sys

import grimp

PACKAGES = ("banditree", "banditree_cli", "service", "simulate")


def components(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = 0
    for root in sorted(graph.modules):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.find_modules_directly_imported_by(root))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append(
                        (child, iter(sorted(graph.find_modules_directly_imported_by(child))))
                    )
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                members = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    members.append(member)
                    if member == node:
                        break
                if len(members) > 1:
                    found.append(sorted(members))
    return found


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
