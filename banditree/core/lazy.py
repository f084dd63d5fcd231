"""Package names that load on first use (PEP 562), so importing a package stays cheap.

``banditree --help`` imports every command's package; the serving path imports the
numpy model families only.  A package lists where each public name lives and sets
``__getattr__ = lazy_names(__name__, WHERE)``; the module holding a name is imported
when the name is first read.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def lazy_names(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module ``__getattr__`` for ``package`` reading each name from ``where[name]``."""

    def __getattr__(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        return getattr(importlib.import_module(module), name)

    return __getattr__
