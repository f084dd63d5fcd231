"""Run every benchmark module (or the ones named): ``python -m benchmarks [name ...]``.

Each module exposes ``main(argv)``; here they run with their default (modest) settings.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys

import benchmarks


def benchmark_names() -> list[str]:
    """Names of the benchmark modules in this package, sorted."""
    return sorted(
        m.name for m in pkgutil.iter_modules(benchmarks.__path__) if not m.name.startswith("_")
    )


def run(names: list[str]) -> None:
    for name in names or benchmark_names():
        module = importlib.import_module(f"benchmarks.{name}")
        print(f"== benchmarks.{name}", flush=True)
        module.main([])


if __name__ == "__main__":
    run(sys.argv[1:])
