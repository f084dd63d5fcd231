"""Which models a key reaches (shared by the key check and the model list)."""

from __future__ import annotations

import fnmatch

#: the ASGI scope's ``state`` key holding the model patterns of a key limited to models
SCOPE_STATE_KEY = "banditree_models"
#: the ASGI scope's ``state`` key holding the roles of the request's key (``GET /v1/whoami``)
ROLES_STATE_KEY = "banditree_roles"


def visible(patterns: tuple[str, ...] | None, name: str) -> bool:
    """Whether a key limited to ``patterns`` (None: every model) reaches model ``name``.

    Patterns are exact names or ``fnmatch`` patterns (``shop-*``), matched case-sensitively.
    """
    return patterns is None or any(fnmatch.fnmatchcase(name, p) for p in patterns)
