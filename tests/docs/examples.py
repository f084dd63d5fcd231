"""Find the code blocks of the README and the docs site, and say how each one runs.

A fenced block's language decides: ``python`` blocks are executed, ``bash``/``sh``/
``shell`` blocks are run by bash, ``javascript``/``js`` blocks by Node.js (each on its own,
with the packages of ``tests/personalizer_js``); every other language (``text``, ``json``, ``yaml``,
``ini``, ``nginx``) is not code and is not run.  A block right after the comment
``<!-- not-run: REASON -->`` is reported as skipped with that reason (a deployment that
needs Docker, a server that runs until stopped).  Blocks of one page run in order and
share state: one Python namespace, one set of shell variables, one working directory.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUNNABLE = {
    "python": "python", "py": "python", "bash": "shell", "sh": "shell", "shell": "shell",
    "javascript": "javascript", "js": "javascript",
}  # fmt: skip
#: the Node packages JavaScript blocks use (``npm ci`` there, as ``.ci/run`` does)
NODE_PACKAGES = ROOT / "tests" / "personalizer_js" / "node_modules"
NOT_CODE = {"text", "json", "yaml", "ini", "nginx", "toml", "console-output"}
_FENCE = re.compile(r"^(?P<indent> *)(?P<fence>```+|~~~+)\s*(?P<info>[^\n`]*)$")
_NOT_RUN = re.compile(r"<!--\s*not-run:\s*(?P<reason>.+?)\s*-->")
#: the address a reader's own ``make serve`` answers on; tests point it at their server
READER_ADDRESSES = (
    "http://127.0.0.1:8000",
    "http://localhost:8000",
    "127.0.0.1:8000",
    "localhost:8000",
)


@dataclass(frozen=True)
class Block:
    """One fenced code block of a page."""

    page: Path
    line: int  # 1-based line of the opening fence
    language: str  # "python", "shell", "javascript", or the fence's language when not code
    code: str
    not_run: str | None  # the reason given in a not-run comment

    @property
    def id(self) -> str:
        return f"{self.page.relative_to(ROOT)}:{self.line}"

    @property
    def needs_server(self) -> bool:
        return any(address in self.code for address in READER_ADDRESSES)


def pages() -> list[Path]:
    """README.md and every hand-written page of the site."""
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def blocks(page: Path) -> list[Block]:
    """The fenced blocks of ``page``, in order; a fence without a language is an error."""
    found: list[Block] = []
    lines = page.read_text().splitlines()
    index = 0
    while index < len(lines):
        opening = _FENCE.match(lines[index])
        if opening is None:
            index += 1
            continue
        fence, info = opening["fence"], opening["info"].strip()
        language = info.split()[0].lower() if info else ""
        if not language:
            raise ValueError(f"{page}:{index + 1}: a code block needs a language")
        before = next((lines[i] for i in range(index - 1, -1, -1) if lines[i].strip()), "")
        reason = _NOT_RUN.search(before)
        end = index + 1
        while end < len(lines) and lines[end].strip() != fence:
            end += 1
        indent = len(opening["indent"])
        code = "\n".join(line[indent:] for line in lines[index + 1 : end]) + "\n"
        kind = RUNNABLE.get(language)
        if kind is None and language not in NOT_CODE:
            raise ValueError(f"{page}:{index + 1}: unknown code block language {language!r}")
        found.append(Block(page, index + 1, kind or language, code, reason and reason["reason"]))
        index = end + 1
    return found


def point_at(code: str, url: str) -> str:
    """``code`` with the reader's ``127.0.0.1:8000`` replaced by the test server's ``url``."""
    host = url.removeprefix("http://")
    for address in READER_ADDRESSES:
        code = code.replace(address, url if address.startswith("http") else host)
    return code
