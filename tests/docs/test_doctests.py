"""The Examples sections of the library's docstrings run, as ``--doctest-modules`` would.

Every module of ``banditree`` and ``simulate`` whose source holds a ``>>>`` example is
collected (a new Examples section is picked up without listing it here), imported and
run by :mod:`doctest`; a failing example fails with doctest's report.  An example that
needs a live server says so with ``# doctest: +SKIP``.
"""

from __future__ import annotations

import doctest
import importlib
import io
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("banditree", "simulate")


def _modules_with_examples() -> list[str]:
    found = []
    for package in PACKAGES:
        for path in sorted((ROOT / package).rglob("*.py")):
            if path.name == "__main__.py" or ">>> " not in path.read_text():
                continue
            parts = path.relative_to(ROOT).with_suffix("").parts
            found.append(".".join(parts[:-1] if parts[-1] == "__init__" else parts))
    return found


MODULES = _modules_with_examples()


def test_the_examples_are_found() -> None:
    """The collection itself works: the explorers' examples are among those run."""
    assert "banditree.explore.fastcb" in MODULES
    assert len(MODULES) >= 10


@pytest.mark.parametrize("name", MODULES)
def test_module_examples_pass(name: str) -> None:
    module = importlib.import_module(name)
    out = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    tests = doctest.DocTestFinder().find(module, name)
    assert any(t.examples for t in tests), f"{name}: no example found by doctest"
    for test in tests:
        runner.run(test, out=out.write)
    result = runner.summarize(verbose=False)
    assert result.failed == 0, out.getvalue()
