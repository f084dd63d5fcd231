"""Every page of the site is in the nav of ``mkdocs.yml``, and the nav names no missing page.

``mkdocs build --strict`` refuses a page left out of the nav only when it logs the
warning; this holds the rule without a build, for hand-written pages, decision records
and the results pages copied in from ``benchmarks/results``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]


def _nav_pages(node: Any) -> list[str]:
    if isinstance(node, str):
        return [node]
    if isinstance(node, list):
        return [page for item in node for page in _nav_pages(item)]
    if isinstance(node, dict):
        return [page for value in node.values() for page in _nav_pages(value)]
    return []


def _nav() -> set[str]:
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    return set(_nav_pages(config["nav"]))


def _generated() -> set[str]:
    """The pages ``docs/gen_reference.py`` writes at build time."""
    reference = {f"reference/{name}.md" for name in ("config", "settings", "http", "metrics")}
    results = {f"benchmarks/{p.name}" for p in (ROOT / "benchmarks" / "results").glob("*.md")}
    return reference | results


def test_every_page_is_in_the_nav() -> None:
    written = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    missing = sorted((written | _generated()) - _nav())
    assert not missing, f"pages not in the nav of mkdocs.yml: {missing}"


def test_the_nav_names_only_pages_that_exist() -> None:
    written = {str(p.relative_to(ROOT / "docs")) for p in (ROOT / "docs").rglob("*.md")}
    ghosts = sorted(_nav() - written - _generated())
    assert not ghosts, f"nav entries without a page: {ghosts}"
