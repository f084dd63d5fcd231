"""A served tree as a person can read and run it: named splits on raw features.

:func:`export_tree` combines a hard tree's JSON (``banditree.hard_tree/v1``), the
served encoder view and the served input scaling into one document
(``banditree.named_tree/v1``): each column's name and the statistics it is scaled
with, and each split written on the raw features with the scaling folded in
(``0.8 * age + 1.3 * [country = DE] - 0.2 > 0``).  The folded split is exact where no
standardised value is clipped; :class:`ReferenceEvaluator` applies the clip, so it
reproduces every served leaf and greedy action from a raw JSON context::

    x = encode(context)                      # columns, as documented in "columns"
    z = clip((x - mean) / scale, -c, c)      # c = "clip" (none: no clip)
    node = 0                                 # go right when w . z + b > 0
    for _ in range(height): node = 2 * node + (2 if dot(w[node], z) + b[node] > 0 else 1)
    scores = theta[leaf] + linear @ z        # greedy action = argmax(scores)
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any, cast

import numpy as np

from banditree.features.encoder import FeatureEncoder, category_key
from banditree.features.schema import flatten_context

FORMAT = "banditree.named_tree/v1"


def _encoding(encoder: FeatureEncoder) -> list[dict[str, Any]]:
    """The served encoder view: per feature its type, first column, slots and imputation."""
    out = []
    for name, spec in encoder.schema.features.items():
        item: dict[str, Any] = {"name": name, "type": spec.type, "missing": spec.missing}
        item["offset"] = encoder._offsets[name]
        if spec.type in ("numeric", "boolean"):
            item["impute"] = float(encoder.served_mean[encoder._numeric[name]])
        else:
            vocab = encoder._vocab[name]
            item["slots"] = [k for k, i in sorted(vocab.slots.items(), key=lambda t: t[1])][
                : vocab.visible
            ]
            item["n_slots"] = spec.slots
        out.append(item)
    return out


def split_text(weights: np.ndarray, bias: float, names: list[str], max_terms: int = 8) -> str:
    """``0.8 * age + 1.3 * [country = DE] - 0.2 > 0``: the largest terms first."""
    order = [int(j) for j in np.argsort(-np.abs(weights), kind="stable") if weights[j] != 0.0]
    parts: list[str] = []
    for j in order[:max_terms]:
        sign = "-" if weights[j] < 0 else "+"
        parts.append(f"{sign} {abs(weights[j]):.3g} * {names[j]}")
    if len(order) > max_terms:
        parts.append(f"+ ... ({len(order) - max_terms} smaller terms)")
    parts.append(f"{'-' if bias < 0 else '+'} {abs(bias):.3g}")
    text = " ".join(parts)
    text = text[2:] if text.startswith("+ ") else "-" + text[2:]
    return f"{text} > 0"


def export_tree(
    tree: Mapping[str, Any],
    encoder: FeatureEncoder,
    mean: np.ndarray,
    inv_scale: np.ndarray,
    clip: float | None,
    max_terms: int = 8,
) -> dict[str, Any]:
    """The named document of the module docstring for a served tree and its input path."""
    names = encoder.columns()
    scale = 1.0 / np.asarray(inv_scale, dtype=np.float64)
    # a vocabulary slot no category holds yet is 0 in every context learned or served
    unused = np.zeros(len(names), dtype=bool)
    for name, vocab in encoder._vocab.items():
        start = encoder._offsets[name]
        unused[start + len(vocab.slots) : start + vocab.bound] = True
    nodes = []
    for node in tree["nodes"]:
        w = np.asarray(node["weights"], dtype=np.float64)
        raw_w = np.where(unused, 0.0, w * inv_scale)  # folded: w . (x - mean) * inv_scale + b
        raw_b = float(node["bias"] - raw_w.dot(mean))
        nodes.append({**node, "raw_weights": raw_w.tolist(), "raw_bias": raw_b,
                      "split": split_text(raw_w, raw_b, names, max_terms)})  # fmt: skip
    return {
        "format": FORMAT,
        "tree": {**tree, "nodes": nodes},
        "columns": names,
        "encoding": _encoding(encoder),
        "mean": np.asarray(mean, dtype=np.float64).tolist(),
        "scale": scale.tolist(),
        "clip": clip,
        "rule": "z = clip((encode(context) - mean) / scale); right when dot(weights, z) + bias > 0",
    }


class ReferenceEvaluator:
    """Runs an :func:`export_tree` document on raw JSON contexts (no learner needed)."""

    def __init__(self, document: Mapping[str, Any]) -> None:
        if document.get("format") != FORMAT:
            raise ValueError(f"not a {FORMAT} document")
        self.doc = document
        tree = document["tree"]
        self.height = int(tree["height"])
        nodes = sorted(tree["nodes"], key=lambda n: n["id"])
        self.w = np.array([n["weights"] for n in nodes], dtype=np.float64)
        self.b = np.array([n["bias"] for n in nodes], dtype=np.float64)
        leaves = sorted(tree["leaves"], key=lambda n: n["leaf"])
        self.theta = np.array([n["value"] for n in leaves], dtype=np.float64)
        self.linear = np.array(tree["linear"]) if "linear" in tree else None
        self.mean = np.array(document["mean"], dtype=np.float64)
        self.scale = np.array(document["scale"], dtype=np.float64)
        self.clip = document["clip"]
        self.width = len(document["columns"])

    def encode(self, context: Mapping[str, Any]) -> np.ndarray:
        """The encoded columns of a raw context (the documented encoding)."""
        flat, x = flatten_context(context), np.zeros(self.width)
        for f in self.doc["encoding"]:
            at, value = f["offset"], flat.get(f["name"])
            value = cast(Any, value)
            missing = value is None or (isinstance(value, float) and math.isnan(value))
            if f["type"] in ("numeric", "boolean"):
                if isinstance(value, str):  # boolean words
                    value = value.strip().lower() in ("true", "yes", "1", "t", "y")
                x[at] = f["impute"] if missing else float(value)
                if missing and f["missing"]:
                    x[at + 1] = 1.0
                continue
            other = at + f["n_slots"]
            if missing:
                if f["missing"]:
                    x[other + 1] = 1.0
                continue
            values = value if isinstance(value, list | tuple) else [value]
            for v in values:
                key = category_key(v, f["name"])
                x[at + f["slots"].index(key) if key in f["slots"] else other] = 1.0
        return x

    def standardised(self, context: Mapping[str, Any]) -> np.ndarray:
        z = (self.encode(context) - self.mean) / self.scale
        return z if self.clip is None else np.clip(z, -self.clip, self.clip)

    def path(self, context: Mapping[str, Any]) -> list[tuple[int, bool]]:
        """``(node id, went right)`` from the root to the leaf."""
        z, node, steps = self.standardised(context), 0, []
        for _ in range(self.height):
            right = bool(self.w[node].dot(z) + self.b[node] > 0.0)
            steps.append((node, right))
            node = 2 * node + (2 if right else 1)
        return steps

    def leaf(self, context: Mapping[str, Any]) -> int:
        node, right = self.path(context)[-1]
        return 2 * node + (2 if right else 1) - len(self.b)

    def scores(self, context: Mapping[str, Any]) -> np.ndarray:
        z = self.standardised(context)
        row = self.theta[self.leaf(context)]
        return row if self.linear is None else row + self.linear.dot(z)

    def greedy(self, context: Mapping[str, Any]) -> int:
        return int(np.argmax(self.scores(context)))

    def explain(self, context: Mapping[str, Any]) -> list[str]:
        """The leaf's path as named conditions (``... > 0`` or ``not (... > 0)``)."""
        nodes = {n["id"]: n for n in self.doc["tree"]["nodes"]}
        return [
            nodes[i]["split"] if right else f"not ({nodes[i]['split']})"
            for i, right in self.path(context)
        ]
