"""Run benchmarks by name: ``python -m benchmarks [NAME ...]``.

Benchmarks sit in three packages by purpose: ``quality`` (how well a learner decides),
``speed`` (time per decision, request or epoch) and ``scale`` (many models, high rates,
several processes); a helper sits beside the one script that uses it.  A name is
``area.module`` or the module's name alone.  With no name it runs the quick ones (hot-path
latency and throughput); ``--list`` shows every benchmark with its one-line description.
Each benchmark is also a command of its own, ``python -m benchmarks.AREA.NAME --help``,
with its own options.
"""

from __future__ import annotations

import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

QUICK = ("speed.dgt_latency", "speed.bandit_throughput")
#: the benchmark areas, one package each
AREAS = ("quality", "speed", "scale")


def available() -> dict[str, str]:
    """Benchmark names (``area.module``: quality, speed, scale) and their docstrings' first line."""
    here = Path(__file__).parent
    out = {}
    for area in AREAS:
        for info in pkgutil.iter_modules([str(here / area)]):
            if info.name.startswith("_"):
                continue
            name = f"{area}.{info.name}"
            doc = importlib.import_module(f"benchmarks.{name}").__doc__ or ""
            out[name] = doc.strip().splitlines()[0] if doc.strip() else ""
    return dict(sorted(out.items()))


def resolve(name: str, names: dict[str, str]) -> str | None:
    """``name`` as ``area.module``: given in full, or by the module's name alone."""
    if name in names:
        return name
    found = [full for full in names if full.split(".", 1)[1] == name]
    return found[0] if len(found) == 1 else None


def main(argv: list[str]) -> int:
    names = available()
    if "--list" in argv or "-h" in argv or "--help" in argv:
        print(__doc__)
        for name, doc in names.items():
            print(f"  {name:32s} {doc}")
        return 0
    asked = argv or [n for n in QUICK if n in names]
    unknown = [n for n in asked if resolve(n, names) is None]
    if unknown:
        print(
            f"unknown benchmark(s): {', '.join(unknown)}; known: {', '.join(names)}",
            file=sys.stderr,
        )
        return 2
    chosen = [full for full in (resolve(n, names) for n in asked) if full is not None]
    status = 0
    for name in chosen:
        print(f"== benchmarks.{name}", flush=True)
        status |= subprocess.call([sys.executable, "-m", f"benchmarks.{name}"])
    return status


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
