"""The console: static assets (HTML, CSS, ES modules) that ``banditree serve`` serves at ``/ui``.

The console is a client of the public HTTP API only; nothing here imports the service
or the library.  :func:`assets_directory` is where the files are installed.
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

__all__ = ["ENTRY", "assets_directory"]

#: the page every console URL loads (routing happens in the browser, on the URL's hash)
ENTRY = "index.html"


def assets_directory() -> Path:
    """The installed console files (``index.html``, ``console.css``, ``js/``)."""
    return Path(str(files("banditree_console") / "static"))
