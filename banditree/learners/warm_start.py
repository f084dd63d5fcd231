"""Warm start: a DGT bandit learner that begins from a ``banditree train`` model.

What is carried over:

* the node layers ``W`` (copied when the learner has the same ``hidden`` widths,
  collapsed into one matrix when the learner is a plain ``L = 1`` tree);
* the leaves: classification class logits become the bandit's REWARD logits,
  ``theta_l(k) = logit(softmax(theta_l)_k)`` (the reward of action ``k`` is 1 when
  ``k`` is the label, so its expected value is the class probability; clipped to
  ``[1e-3, 1 - 1e-3]``; actions absent from the training labels get ``logit(1e-3)``);
  regression leaves are mapped into the learner's ``target_offset + target_scale * output``;
* the input standardisation: the learner's running statistics start at the training
  mean and standard deviation with the training row count (or, with
  ``standardize=False``, the standardisation is folded into ``W0``).

* for a tree trained on named features (the file carries its schema and encoder
  state): the encoder's state (numeric means, vocabularies).  The model's features
  must be the file's: a config that declares none takes them
  (:meth:`~banditree.learners.config.LearnerConfig.for_initial_model`).

Exploration, estimator and optimiser stay as configured (the optimiser starts fresh).
The learner is changed through its own ``state`` / ``load_state``, so a checkpoint of a
warm-started learner restores like any other.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.learners.base import Learner
from banditree.models.dgt.scaling import FeatureStandardizer
from banditree.models.dgt.trained import InvalidModelFile, TrainedTree
from banditree.models.dgt.tree_ops import effective_weights_np

#: Class probabilities are clipped to [PROBABILITY_FLOOR, 1 - PROBABILITY_FLOOR] before the logit.
PROBABILITY_FLOOR = 1e-3


class ModelMismatch(InvalidModelFile):
    """A trained model that does not fit the learner's configuration; ``field`` names what differs."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{message} (config field {field!r})")
        self.field = field


def reward_logits(class_logits: FloatArray, classes: tuple[Any, ...], n_actions: int) -> FloatArray:
    """Leaf class logits ``(n_leaves, C)`` -> reward logits ``(n_leaves, n_actions)``."""
    shifted = class_logits - class_logits.max(axis=1, keepdims=True)
    prob = np.exp(shifted)
    prob /= prob.sum(axis=1, keepdims=True)
    out = np.full((class_logits.shape[0], n_actions), PROBABILITY_FLOOR)
    for column, label in enumerate(classes):
        out[:, int(label)] = prob[:, column]
    out = np.clip(out, PROBABILITY_FLOOR, 1.0 - PROBABILITY_FLOOR)
    result: FloatArray = np.log(out) - np.log1p(-out)
    return result


def _check_features(model: TrainedTree, config: dict[str, Any]) -> None:
    from banditree.features import FeatureSchema

    declared = config.get("features")
    if model.features is None:
        if declared is not None:
            raise ModelMismatch(
                "features", "the file's tree reads plain floats, the model named features"
            )
        return
    if declared is None or declared == "infer":
        raise ModelMismatch(
            "features",
            "the file's tree reads named features, the model lists of floats "
            "(leave n_features out: the model takes the file's features)",
        )
    try:
        theirs = FeatureSchema.model_validate(model.features).to_json()
    except ValueError as err:
        raise InvalidModelFile(f"the file's features are not a schema: {err}") from None
    if FeatureSchema.model_validate(declared).to_json() != theirs:
        raise ModelMismatch("features", "the model's features differ from the file's")


def _encoder_state(model: TrainedTree) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
    """The file's encoder state as a FeaturedLearner's ``features.*`` tensors and meta."""
    state = model.encoder or {}
    try:
        tensors = {
            f"features.{k}": np.asarray(state[k], dtype=np.float64)
            for k in ("count", "mean", "served_mean")
        }
        return tensors, {"vocabularies": dict(state["vocabularies"])}
    except (KeyError, TypeError, ValueError) as err:
        raise InvalidModelFile(f"the file's encoder state is unreadable: {err}") from None


def _check(model: TrainedTree, config: dict[str, Any]) -> None:
    _check_features(model, config)
    if config.get("kind", "dgt") != "dgt":
        raise ModelMismatch("kind", f"warm start needs kind 'dgt', got {config.get('kind')!r}")
    task = config.get("task", "classification")
    if model.task != task:
        raise ModelMismatch("task", f"the file holds a {model.task} tree, the model is {task}")
    if model.n_features != config["n_features"]:
        raise ModelMismatch(
            "n_features",
            f"the file's tree reads {model.n_features} features, the model {config['n_features']}",
        )
    height = config.get("height") or (6 if task == "classification" else 8)
    if model.height != height:
        raise ModelMismatch(
            "height", f"the file's tree has height {model.height}, the model {height}"
        )
    hidden = list(config.get("hidden") or [])
    if hidden and hidden != model.hidden:
        raise ModelMismatch(
            "hidden",
            f"the file's tree has hidden widths {model.hidden}, the model {hidden} "
            "(give the same widths, or [] to collapse them)",
        )
    if task == "classification":
        n_actions = int(config["n_actions"])
        bad = [c for c in model.classes if not (isinstance(c, int) and 0 <= c < n_actions)]
        if bad:
            raise ModelMismatch(
                "n_actions",
                f"the file's class labels {bad[:5]} are not actions 0..{n_actions - 1}",
            )


def warm_start(learner: Learner, model: TrainedTree | bytes) -> None:
    """Start ``learner`` (a fresh DGT bandit learner) from ``model``'s tree and statistics.

    Raises
    ------
    InvalidModelFile
        ``model`` bytes are not an intact model file.
    ModelMismatch
        The model does not fit the learner's configuration (the learner is unchanged).
    """
    trained = model if isinstance(model, TrainedTree) else TrainedTree.from_bytes(model)
    config = learner.config()
    _check(trained, config)
    tensors, meta = learner.state()
    standardize = bool(config.get("standardize", True))
    layers = list(trained.layers)
    if not config.get("hidden"):
        layers = [effective_weights_np(layers)]
    if not standardize:
        stats = FeatureStandardizer(trained.input_mean, trained.input_std)
        layers[0] = stats.fold_into(layers[0])
    for i, w in enumerate(layers):
        key = f"param.W{i}"
        if key not in tensors or tensors[key].shape != w.shape:
            raise InvalidModelFile(f"layer W{i} does not fit the learner")
        tensors[key] = np.array(w, dtype=np.float64)
    if trained.task == "classification":
        theta = reward_logits(trained.theta, trained.classes, int(config["n_actions"]))
    else:
        offset = float(config.get("target_offset", 0.0))
        scale = float(config.get("target_scale", 1.0))
        values = trained.target_low + trained.target_span * trained.theta
        theta = (values - offset) / scale
    tensors["param.theta"] = theta
    if standardize:
        count = max(2, trained.n_rows)
        tensors["std.mean"] = trained.input_mean.copy()
        tensors["std.m2"] = trained.input_std**2 * (count - 1)
        tensors["snapshot.mean"] = trained.input_mean.copy()
        tensors["snapshot.inv_scale"] = 1.0 / trained.input_std
        meta = {**meta, "std_count": count}
    if trained.features is not None:
        encoder_tensors, encoder_meta = _encoder_state(trained)
        tensors.update(encoder_tensors)
        meta = {**meta, "features": encoder_meta}
    if not all(np.isfinite(t).all() for t in tensors.values()):
        raise InvalidModelFile("the model maps to non-finite learner parameters")
    try:
        learner.load_state(tensors, meta)
    except (KeyError, TypeError, ValueError) as err:
        raise InvalidModelFile(f"the file's state does not fit the learner: {err}") from None
