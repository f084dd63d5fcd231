"""Run benchmarks by name: ``python -m benchmarks [NAME ...]``.

With no name it runs the quick ones (hot-path latency and throughput); ``--list``
shows every benchmark with its one-line description. Each benchmark is also a
command of its own, ``python -m benchmarks.NAME --help``, with its own options.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

QUICK = ("dgt_latency", "bandit_throughput")


def available() -> dict[str, str]:
    """Benchmark module names and the first line of their docstrings."""
    here = Path(__file__).parent
    out = {}
    for info in pkgutil.iter_modules([str(here)]):
        if info.name.startswith("_"):
            continue
        doc = importlib.import_module(f"benchmarks.{info.name}").__doc__ or ""
        out[info.name] = doc.strip().splitlines()[0] if doc.strip() else ""
    return dict(sorted(out.items()))


def main(argv: list[str]) -> int:
    names = available()
    if "--list" in argv or "-h" in argv or "--help" in argv:
        print(__doc__)
        for name, doc in names.items():
            print(f"  {name:22s} {doc}")
        return 0
    chosen = argv or [n for n in QUICK if n in names]
    unknown = [n for n in chosen if n not in names]
    if unknown:
        print(
            f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(names)}",
            file=sys.stderr,
        )
        return 2
    status = 0
    for name in chosen:
        print(f"== benchmarks.{name}", flush=True)
        status |= subprocess.call([sys.executable, "-m", f"benchmarks.{name}"])
    return status


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
