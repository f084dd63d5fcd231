"""The ``--config`` files of ``banditree evaluate``: JSON learner configurations by name."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any


def read_configs(paths: list[Path]) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Each ``--config`` file's ``(path, JSON object)`` by name (the file stem, ``-2``,
    ``-3``... for repeated stems)."""
    configs: dict[str, tuple[Path, dict[str, Any]]] = {}
    for path in paths:
        try:
            config = json.loads(Path(path).read_text())
        except (OSError, json.JSONDecodeError) as err:
            raise ValueError(f"--config {path}: cannot read a JSON configuration: {err}") from None
        if not isinstance(config, dict):
            raise ValueError(f"--config {path}: a configuration is a JSON object")
        name, k = Path(path).stem, 2
        while name in configs:
            name, k = f"{Path(path).stem}-{k}", k + 1
        configs[name] = (path, config)
    if not configs:
        raise ValueError("give at least one --config")
    return configs
