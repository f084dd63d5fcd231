"""Introspection and checkpoints: parameters, export, ``state()`` and ``load_state()``."""

from __future__ import annotations

from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray
from banditree.core.records import Decision, Feedback
from banditree.learners.base import Tensors
from banditree.learners.gradient_bandit.base import GradientBase, Snapshot
from banditree.learners.validation import as_context
from banditree.models.spec import Params


class Checkpointing(GradientBase):
    """What a checkpoint holds and how a learner resumes from one."""

    @property
    def counters(self) -> dict[str, float]:
        """The shared counters, with ``feedback_clipped`` (gradient estimates cut to the
        clip's bound), ``feedback_refused`` (feedback whose update was dropped or whose
        estimate was not finite) and ``drift_signals`` (changes the detector signalled)."""
        clip, detector = self._clip, self._detector
        return {
            **super().counters,
            "feedback_clipped": clip.clipped if clip is not None else 0,
            "feedback_refused": self._refused + (clip.refused if clip is not None else 0),
            "drift_signals": detector.signals if detector is not None else 0,
        }

    def drift_events(self) -> list[dict[str, Any]]:
        """The change detector's newest signals, oldest first (none without a detector)."""
        detector = self._detector
        return [] if detector is None else [dict(r) for r in detector.recent]

    def parameters(self) -> Params:
        """A copy of the current parameters."""
        return {k: v.copy() for k, v in self._params.items()}

    def export_model(self) -> dict[str, Any]:
        return self.model.export(self._snapshot.frozen)

    def served_scaling(self) -> tuple[FloatArray, FloatArray, float | None]:
        """``(mean, inv_scale, clip)``: what decisions apply to a context before the model
        (``clip((x - mean) * inv_scale, -clip, clip)``), of the served snapshot."""
        snap = self._snapshot
        return snap.mean.copy(), snap.inv_scale.copy(), self.context_clip

    def state(self) -> tuple[Tensors, dict[str, Any]]:
        tensors: Tensors = {f"param.{k}": v for k, v in self._params.items()}
        tensors.update({f"optim.{k}": v for k, v in self._optimizer.state_tensors().items()})
        tensors.update({f"accum.{k}": v.copy() for k, v in self._accum.items()})
        if self._ridge is not None:
            tensors["ridge.inv_gram"] = self._ridge.inv_gram.copy()
            tensors["ridge.weights"] = self._ridge.weights.copy()
            tensors["ridge.mix_stats"] = self._ridge.mix_stats.copy()
            tensors["ridge.prior"] = self._ridge.prior.copy()
        if self._challenger is not None:
            tensors.update(self._challenger.tensors())
        if self._leaf_stats is not None:
            tensors.update(self._leaf_stats.tensors())
        self._fold_inputs()
        tensors["std.mean"] = self._standardizer.mean
        tensors["std.m2"] = self._standardizer.m2
        # the statistics decisions read: those of the last update, not the running ones
        tensors["snapshot.mean"] = self._snapshot.mean
        tensors["snapshot.inv_scale"] = self._snapshot.inv_scale
        meta = {
            "config": self.config(),
            "version": self._snapshot.version,
            "pending": self._pending,
            **self._counter_state(),
            "std_count": self._standardizer.count,
            "rng": self._rng.bit_generator.state,
            "accum_finite": self._accum_finite,
            "refused": self._refused,
            "explore_origin": self._explore_origin,
            "detector": self._detector.state() if self._detector is not None else None,
            "ridge_challenger": self._challenger.state() if self._challenger else None,
            "clip": self._clip.state() if self._clip is not None else None,
            # feedback queued for the current window (see learn); contexts are in decisions
            "buffered": [
                {"decision": d.to_dict(), "feedback": f.to_dict()} for _, d, f in self._buffer
            ],
        }
        return {k: np.ascontiguousarray(v, dtype=np.float64) for k, v in tensors.items()}, meta

    def load_state(self, tensors: Tensors, meta: dict[str, Any]) -> None:
        def group(prefix: str) -> Params:
            return {
                k[len(prefix) :]: np.array(v, dtype=np.float64)
                for k, v in tensors.items()
                if k.startswith(prefix)
            }

        params = self.model.upgrade_params(group("param."))
        expected = self.model.init_params(np.random.default_rng(0))
        if set(params) != set(expected) or any(
            params[k].shape != expected[k].shape for k in expected
        ):
            raise ValueError("checkpoint parameters do not match the model configuration")
        if not all(np.isfinite(p).all() for p in params.values()):
            raise ValueError("checkpoint holds non-finite parameters")
        self._params = params
        ridge = self._ridge
        if ridge is not None and "ridge.weights" not in tensors:
            # a checkpoint of a gradient-stepped linear term: the ridge starts from it
            ridge.restart(params["linear"], params["bias"], trusted=True)
        elif ridge is not None:
            if "ridge.mix_stats" not in tensors:  # before the mix: the ridge fit was served
                ridge.restart(params["linear"], params["bias"], trusted=True)
            for name in ("inv_gram", "weights", "mix_stats", "prior"):
                if f"ridge.{name}" not in tensors:
                    continue
                value = np.array(tensors[f"ridge.{name}"], dtype=np.float64)
                if value.shape != getattr(ridge, name).shape or not np.isfinite(value).all():
                    raise ValueError(f"checkpoint ridge.{name} does not match the model")
                setattr(ridge, name, value)
        if self._leaf_stats is not None:
            self._leaf_stats.load_tensors(tensors)
        self._optimizer.load_state_tensors(group("optim."))
        self._accum = group("accum.")
        self._input_rows.clear()
        self._standardizer.mean = np.array(tensors["std.mean"], dtype=np.float64)
        self._standardizer.m2 = np.array(tensors["std.m2"], dtype=np.float64)
        self._standardizer.count = int(meta["std_count"])
        self._pending = int(meta["pending"])
        self._load_counter_state(meta)
        self._rng.bit_generator.state = meta["rng"]
        self._accum_finite = bool(meta["accum_finite"])
        self._refused = int(meta.get("refused", 0))  # absent from earlier checkpoints
        self._explore_origin = int(meta.get("explore_origin", 0))
        if self._detector is not None:
            self._detector.load_state(meta.get("detector"))
        if self._clip is not None:
            self._clip.load_state(meta.get("clip"))
        if self._challenger is not None and self._ridge is not None:
            self._challenger.load_state(self._ridge, tensors, meta.get("ridge_challenger"))
        self._buffer = []
        for item in meta["buffered"]:
            decision = Decision.from_dict(item["decision"])
            feedback = Feedback.from_dict(item["feedback"])
            self._buffer.append((as_context(decision.context, self.n_features), decision, feedback))
        # decisions read the statistics saved with the snapshot, not the running ones
        self._snapshot = Snapshot(
            int(meta["version"]),
            self.model.freeze(params),
            np.array(tensors["snapshot.mean"], dtype=np.float64),
            np.array(tensors["snapshot.inv_scale"], dtype=np.float64),
        )
