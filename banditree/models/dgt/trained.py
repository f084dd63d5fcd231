"""The file ``banditree train`` writes: a trained DGT as safetensors (parameters + JSON config).

Tensors: the node layers ``W0 .. W{L-1}`` (float32 as trained; training form, on standardised inputs,
bias column last), the leaves ``theta`` ``(2**h, K)`` (class logits, or regression
values on the min-max scaled target), and the input standardisation ``input_mean``,
``input_std``.  The header metadata ``banditree.trained_dgt`` holds the JSON
configuration (task, sizes, classes, target scaling, training settings) and
``banditree.sha256`` a checksum over tensors and configuration.  Nothing is unpickled;
a file whose checksum does not match is refused whole.

A tree trained on named features (a table with categorical, boolean or missing cells)
also carries, in that JSON, the feature ``schema`` and the state of the encoder that
made its columns (``encoder``: the numeric means missing numbers are imputed with, and
the vocabularies), so that a bandit model with the same features starts from it
(:mod:`banditree.learners.warm_start`).  A tree on plain floats carries neither key.
"""

from __future__ import annotations

import base64
import binascii
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from safetensors.numpy import load as st_load
from safetensors.numpy import save as st_save

from banditree.core.arrays import FloatArray
from banditree.core.digest import tensor_digest
from banditree.models.dgt.frozen import FrozenTree
from banditree.models.dgt.scaling import FeatureStandardizer, TargetMinMax, fold_scalers
from banditree.models.dgt.tree_ops import check_height, effective_weights_np

FORMAT = "banditree.trained_dgt/v1"
#: Largest model file accepted (bytes), here and by the service's upload.
MAX_FILE_BYTES = 32 * 1024 * 1024


def base64_length(n_bytes: int) -> int:
    """Characters of the base64 text of ``n_bytes`` bytes."""
    return 4 * ((n_bytes + 2) // 3)


class InvalidModelFile(ValueError):
    """Bytes that are not a readable, intact ``banditree train`` model file."""


def _checked_features(meta: dict[str, Any]) -> dict[str, Any]:
    """The ``features`` and ``encoder`` of a file's JSON, as objects (their content is
    checked where a learner's encoder restores them: the warm start); none: {}."""
    if meta.get("features") is None:
        return {}
    features, encoder = meta["features"], meta.get("encoder")
    if not isinstance(features, dict) or not isinstance(encoder, dict):
        raise ValueError("a tree on named features needs its schema and encoder state")
    return {"features": features, "encoder": encoder}


@dataclass(frozen=True)
class TrainedTree:
    """A supervised DGT with everything needed to predict or to warm-start a bandit.

    Attributes
    ----------
    task
        ``"classification"`` or ``"regression"``.
    layers
        Node layers on standardised inputs, ``W0`` ``(., d + 1)`` first.
    theta
        Leaf rows ``(2**h, K)``: class logits, or values on the ``[0, 1]`` target scale.
    input_mean, input_std
        The standardisation the tree was trained behind.
    classes
        Classification: the label of each ``theta`` column.
    target_low, target_span
        Regression: ``y = target_low + target_span * theta``.
    n_rows
        Rows the standardisation was fitted on.
    info
        Free JSON (training settings, dataset name).
    features, encoder
        A tree on named features: the schema (its ``to_json`` form) and the encoder
        state (``FeatureEncoder.state`` as JSON: ``count``, ``mean``, ``served_mean``,
        ``vocabularies``); None for a tree on plain floats.
    """

    task: str
    layers: tuple[FloatArray, ...]
    theta: FloatArray
    input_mean: FloatArray
    input_std: FloatArray
    classes: tuple[Any, ...] = ()
    target_low: float = 0.0
    target_span: float = 1.0
    n_rows: int = 0
    info: dict[str, Any] = field(default_factory=dict)
    features: dict[str, Any] | None = None
    encoder: dict[str, Any] | None = None

    @property
    def height(self) -> int:
        return int(self.theta.shape[0]).bit_length() - 1

    @property
    def n_features(self) -> int:
        return int(self.input_mean.shape[0])

    @property
    def hidden(self) -> list[int]:
        return [int(w.shape[0]) for w in self.layers[:-1]]

    @classmethod
    def from_estimator(cls, model: Any, info: dict[str, Any] | None = None) -> TrainedTree:
        """The fitted estimator's tree, standardisation and target encoding.

        ``model`` is a fitted :class:`~banditree.supervised.DGTClassifier` or
        :class:`~banditree.supervised.DGTRegressor` (read by its attributes: the model
        file sits below the trainers, which need torch).
        """
        model.freeze()  # raises NotFittedError when not fitted
        assert model.tree_ is not None
        std = model.standardizer_
        layers = tuple(w.detach().double().cpu().numpy().copy() for w in model.tree_.layers)
        theta = model.tree_.theta.detach().double().cpu().numpy().copy()
        common: dict[str, Any] = {
            "layers": layers,
            "theta": theta,
            "input_mean": std.mean.copy(),
            "input_std": std.std.copy(),
            "n_rows": int(getattr(model, "n_rows_", 0)),
            "info": dict(info or {}),
        }
        if hasattr(model, "classes_"):  # a classifier (read without importing torch)
            classes = tuple(c.item() if hasattr(c, "item") else c for c in model.classes_)
            return cls(task="classification", classes=classes, **common)
        scaler: TargetMinMax = model.target_scaler_
        return cls(task="regression", target_low=scaler.low, target_span=scaler.span, **common)

    def learner_config(self) -> dict[str, Any]:
        """A DGT bandit ``LearnerConfig`` body this tree warm-starts (hidden layers collapsed;
        ``features`` instead of ``n_features`` for a tree on named features)."""
        config: dict[str, Any] = {"kind": "dgt", "task": self.task, "height": self.height}
        if self.features is not None:  # named features: the width is the schema's
            config["features"] = self.features
        else:
            config["n_features"] = self.n_features
        if self.task == "classification":
            config["n_actions"] = max(2, max(int(c) for c in self.classes) + 1)
        else:
            config["target_offset"] = self.target_low
            config["target_scale"] = self.target_span
        return config

    def frozen(self) -> FrozenTree:
        """The tree on raw inputs (regression leaves in original units)."""
        tree = FrozenTree(weights=effective_weights_np(list(self.layers)), theta=self.theta)
        scaler = (
            TargetMinMax(self.target_low, self.target_span) if self.task == "regression" else None
        )
        return fold_scalers(tree, FeatureStandardizer(self.input_mean, self.input_std), scaler)

    def predict(self, x: FloatArray) -> np.ndarray:
        """Class labels or values (original units) for raw inputs ``(n, d)``."""
        rows = self.frozen().predict(np.asarray(x, dtype=np.float64))
        if self.task == "classification":
            return np.asarray(self.classes)[np.argmax(rows, axis=1)]
        out: np.ndarray = rows[:, 0]
        return out

    # -- bytes ---------------------------------------------------------------------
    def to_bytes(self) -> bytes:
        # the tree trains in float32: storing its parameters so loses nothing
        tensors = {f"W{i}": np.ascontiguousarray(w, np.float32) for i, w in enumerate(self.layers)}
        tensors["theta"] = np.ascontiguousarray(self.theta, np.float32)
        tensors["input_mean"] = np.ascontiguousarray(self.input_mean)
        tensors["input_std"] = np.ascontiguousarray(self.input_std)
        meta = {
            "format": FORMAT,
            "task": self.task,
            "height": self.height,
            "n_features": self.n_features,
            "n_outputs": int(self.theta.shape[1]),
            "hidden": self.hidden,
            "classes": list(self.classes),
            "target_low": self.target_low,
            "target_span": self.target_span,
            "n_rows": self.n_rows,
            "info": self.info,
        }
        if self.features is not None:  # absent for plain floats: those files are unchanged
            meta["features"] = self.features
            meta["encoder"] = self.encoder
        meta_json = json.dumps(meta, sort_keys=True)
        header = {
            "banditree.trained_dgt": meta_json,
            "banditree.sha256": tensor_digest(tensors, meta_json),
        }
        return st_save(tensors, metadata=header)

    def save(self, path: str | Path) -> None:
        Path(path).write_bytes(self.to_bytes())

    @classmethod
    def from_bytes(cls, blob: bytes) -> TrainedTree:
        """Read :meth:`to_bytes` output; raises :class:`InvalidModelFile` naming what is wrong."""
        if len(blob) > MAX_FILE_BYTES:
            raise InvalidModelFile(f"model file is {len(blob)} bytes, more than {MAX_FILE_BYTES}")
        try:
            tensors = st_load(blob)
            n = int.from_bytes(blob[:8], "little")
            info = json.loads(blob[8 : 8 + n]).get("__metadata__") or {}
            meta_json = info["banditree.trained_dgt"]
            checksum = info["banditree.sha256"]
            meta = json.loads(meta_json)
        except Exception as err:  # any parse failure means the bytes are not a model file
            raise InvalidModelFile(f"not a banditree train model file ({err})") from None
        if meta.get("format") != FORMAT:
            raise InvalidModelFile(f"unknown model file format {meta.get('format')!r}")
        if tensor_digest(tensors, meta_json) != checksum:
            raise InvalidModelFile("checksum mismatch: the model file is damaged")
        try:
            return cls._from_parts(tensors, meta)
        except (KeyError, TypeError, ValueError) as err:
            raise InvalidModelFile(f"inconsistent model file: {err}") from None

    @classmethod
    def _from_parts(cls, tensors: dict[str, np.ndarray], meta: dict[str, Any]) -> TrainedTree:
        height = check_height(int(meta["height"]))
        d, k = int(meta["n_features"]), int(meta["n_outputs"])
        widths = [int(w) for w in meta["hidden"]]
        dims = [d + 1, *widths, (1 << height) - 1]
        layers = tuple(np.asarray(tensors[f"W{i}"], dtype=np.float64) for i in range(len(dims) - 1))
        for i, w in enumerate(layers):
            if w.shape != (dims[i + 1], dims[i]):
                raise ValueError(
                    f"W{i} has shape {list(w.shape)}, expected {[dims[i + 1], dims[i]]}"
                )
        theta = np.asarray(tensors["theta"], dtype=np.float64)
        if theta.shape != (1 << height, k):
            raise ValueError(f"theta has shape {list(theta.shape)}, expected {[1 << height, k]}")
        mean = np.asarray(tensors["input_mean"], dtype=np.float64)
        std = np.asarray(tensors["input_std"], dtype=np.float64)
        if mean.shape != (d,) or std.shape != (d,) or not (std > 0).all():
            raise ValueError("input_mean / input_std must be (n_features,) with std > 0")
        if not all(np.isfinite(a).all() for a in (*layers, theta, mean, std)):
            raise ValueError("the model holds non-finite values")
        task = str(meta["task"])
        if task not in ("classification", "regression"):
            raise ValueError(f"task must be classification or regression, got {task!r}")
        classes = tuple(meta["classes"])
        if task == "classification" and len(classes) != k:
            raise ValueError(f"{len(classes)} classes for {k} outputs")
        span = float(meta["target_span"])
        if not (np.isfinite(span) and span > 0):
            raise ValueError(f"target_span must be > 0, got {span}")
        return cls(
            task=task,
            layers=layers,
            theta=theta,
            input_mean=mean,
            input_std=std,
            classes=classes,
            target_low=float(meta["target_low"]),
            target_span=span,
            n_rows=int(meta["n_rows"]),
            info=dict(meta.get("info") or {}),
            **_checked_features(meta),
        )

    @classmethod
    def from_base64(cls, text: str) -> TrainedTree:
        """Read a model file sent as base64 text (the service's ``initial_model``)."""
        if len(text) > base64_length(MAX_FILE_BYTES):
            raise InvalidModelFile(
                f"{len(text)} base64 characters, more than {base64_length(MAX_FILE_BYTES)} "
                f"(a {MAX_FILE_BYTES}-byte file)"
            )
        try:
            blob = base64.b64decode(text, validate=True)
        except (binascii.Error, ValueError) as err:
            raise InvalidModelFile(f"not base64 ({err})") from None
        return cls.from_bytes(blob)

    def to_base64(self) -> str:
        return base64.b64encode(self.to_bytes()).decode("ascii")

    @classmethod
    def load(cls, path: str | Path) -> TrainedTree:
        p = Path(path)
        if not p.is_file():
            raise InvalidModelFile(f"model file {str(p)!r} does not exist")
        if p.stat().st_size > MAX_FILE_BYTES:
            raise InvalidModelFile(f"model file {str(p)!r} is larger than {MAX_FILE_BYTES} bytes")
        return cls.from_bytes(p.read_bytes())
