"""Hyperparameter grids of ``banditree train``: the paper's Table 11, none, or a JSON file.

A grid is a list of settings, each a dict of :class:`~banditree.supervised.TrainingConfig`
fields (``momentum``, ``hidden``, ``reg_strength``, ``regularization``, ...).
"""

from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

from banditree.supervised.config import TrainingConfig

#: Table 11: regularisation strengths searched when L > 1 (L = 1 uses 0).
PAPER_REG_STRENGTHS = (5e-5, 1e-5, 5e-6, 1e-6, 0.0)
#: Table 11: optimiser momentum by task.
PAPER_MOMENTUM = {"classification": (0.0, 0.3, 0.8), "regression": (0.0, 0.3)}
GRID_NAMES = ("paper", "paper-l1", "none")
#: Fields a grid entry may set (the others come from the command line).
GRID_FIELDS = frozenset(
    {
        "momentum",
        "hidden",
        "reg_strength",
        "regularization",
        "learning_rate",
        "min_learning_rate",
        "rmsprop_eps",
        "grad_clip_norm",
        "restarts",
        "batch_size",
        "epochs",
    }
)


def paper_grid(task: str, overparameterized: bool = True) -> list[dict[str, Any]]:
    """Table 11: momentum x (L = 1, no penalty; L = 3 (Table 12 widths) x L2 strengths)."""
    grid: list[dict[str, Any]] = [
        {"momentum": m, "hidden": [], "reg_strength": 0.0} for m in PAPER_MOMENTUM[task]
    ]
    if overparameterized:
        grid += [
            {"momentum": m, "hidden": "table12", "reg_strength": r, "regularization": "l2"}
            for m in PAPER_MOMENTUM[task]
            for r in PAPER_REG_STRENGTHS
        ]
    return grid


def _expand(entry: dict[str, Any]) -> list[dict[str, Any]]:
    """A dict whose values are lists of choices -> the cartesian product (``hidden`` lists kept)."""
    keys = list(entry)
    choices = []
    for key in keys:
        value = entry[key]
        is_choice_list = isinstance(value, list) and not (
            key == "hidden" and all(isinstance(v, int) for v in value)
        )
        choices.append(value if is_choice_list else [value])
    return [dict(zip(keys, combo, strict=True)) for combo in itertools.product(*choices)]


def load_grid(spec: str, task: str) -> list[dict[str, Any]]:
    """``paper``, ``paper-l1`` (Table 11 with L = 1 only), ``none`` or a JSON file.

    The file holds a list of settings objects, or one object whose values are lists
    of choices (their cartesian product), e.g. ``{"momentum": [0, 0.3], "hidden": [[], [64]]}``.
    """
    if spec == "paper":
        return paper_grid(task)
    if spec == "paper-l1":
        return paper_grid(task, overparameterized=False)
    if spec == "none":
        return [{}]
    path = Path(spec)
    if not path.is_file():
        raise ValueError(
            f"--grid must be one of {', '.join(GRID_NAMES)} or a JSON file; got {spec!r}"
        )
    try:
        data = json.loads(path.read_text())
    except json.JSONDecodeError as err:
        raise ValueError(f"--grid file {path.name} is not JSON: {err}") from None
    entries = data if isinstance(data, list) else [data]
    grid: list[dict[str, Any]] = []
    for entry in entries:
        if not isinstance(entry, dict):
            raise ValueError(f"--grid file {path.name}: every entry must be an object")
        unknown = set(entry) - GRID_FIELDS
        if unknown:
            raise ValueError(
                f"--grid file {path.name}: unknown settings {sorted(unknown)}; "
                f"allowed: {sorted(GRID_FIELDS)}"
            )
        grid += _expand(entry)
    if not grid:
        raise ValueError(f"--grid file {path.name} holds no settings")
    for settings in grid:
        check_settings(settings)
    return grid


def check_settings(settings: dict[str, Any]) -> TrainingConfig:
    """The settings applied to the default config (raises ``ValueError`` naming the bound)."""
    values = dict(settings)
    if isinstance(values.get("hidden"), list):
        values["hidden"] = tuple(values["hidden"])
    return TrainingConfig(**values)


def describe(settings: dict[str, Any]) -> str:
    """Short text of one grid entry: ``momentum=0.3 L=3 l2=1e-05``."""
    hidden = settings.get("hidden", [])
    depth = 3 if hidden == "table12" else len(hidden) + 1
    parts = [f"momentum={settings.get('momentum', 0.0)}", f"L={depth}"]
    if settings.get("reg_strength"):
        parts.append(f"{settings.get('regularization', 'l2')}={settings['reg_strength']:g}")
    parts += [
        f"{k}={v}"
        for k, v in settings.items()
        if k not in ("momentum", "hidden", "reg_strength", "regularization")
    ]
    return " ".join(parts)
