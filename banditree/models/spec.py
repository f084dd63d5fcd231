"""The interface every bandit model family implements for the learners.

A model spec is stateless configuration; parameters live in a plain mapping of
numpy arrays owned by the learner, so that the learner can swap a whole new set
atomically after an update (readers never see a half-written update), export it to
safetensors, and run one optimizer for every family.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from banditree.core.arrays import FloatArray, IntArray
from banditree.models.limits import MAX_PARAMETERS as MAX_PARAMETERS

Params = dict[str, FloatArray]
_set_attribute = object.__setattr__
#: Maps a model output ``(K,)`` to ``d loss / d output`` ``(K,)``.
UpstreamFn = Callable[[FloatArray], FloatArray]


def upstream_rows(upstreams: Sequence[UpstreamFn], outputs: FloatArray) -> FloatArray:
    """``upstreams[b](outputs[b])`` for every row of ``outputs`` ``(B, K)``, stacked: in
    one call where ``upstreams`` offers ``rows`` (a learner's window of one estimator:
    the same numbers without a Python call and an array per row)."""
    rows = getattr(upstreams, "rows", None)
    if rows is not None:
        out: FloatArray = rows(outputs)
        return out
    return np.array([up(row) for up, row in zip(upstreams, outputs, strict=True)])


@dataclass(frozen=True, init=False)
class ModelOutput:
    """A forward pass on one example: raw output ``(K,)``, reached leaf, extra figures."""

    output: FloatArray
    leaf: int | None = None
    extras: dict[str, float] = field(default_factory=dict)
    #: predicted rewards for the explorer; None means ``sigmoid(output)``
    scores: FloatArray | None = None

    def __init__(
        self,
        output: FloatArray,
        leaf: int | None = None,
        extras: dict[str, float] | None = None,
        scores: FloatArray | None = None,
    ) -> None:
        # one assignment (a frozen dataclass's own __init__ sets each field in turn):
        # every decision builds one of these
        _set_attribute(
            self,
            "__dict__",
            {
                "output": output,
                "leaf": leaf,
                "extras": {} if extras is None else extras,
                "scores": scores,
            },
        )


@dataclass(frozen=True)
class BatchOutput:
    """A forward pass on a batch: what :class:`ModelOutput` holds, one row per example.

    ``output`` ``(B, K)``; ``leaf`` ``(B,)`` or None; ``extras`` maps a name to ``(B,)``;
    ``scores`` ``(B, K)`` or None (``sigmoid(output)``).
    """

    output: FloatArray
    leaf: IntArray | None = None
    extras: dict[str, FloatArray] = field(default_factory=dict)
    scores: FloatArray | None = None


class ModelSpec(ABC):
    """A model family as seen by the learners (numpy in, numpy out)."""

    kind: str = "model"
    #: parameter names that L1 / L2 regularisation applies to
    regularised: tuple[str, ...] = ()
    #: parameter name -> factor on the learning rate (names not listed: 1)
    lr_scales: Mapping[str, float] = {}
    #: parameter names stepped by AdaGrad (a running sum of squared gradients, a step
    #: that decays) instead of RMSprop's running average
    summed: tuple[str, ...] = ()
    #: :meth:`forward_rows` gives each row the numbers :meth:`forward` gives it alone
    #: (the same leaf and outputs: a service may then decide one-context requests
    #: together); False where a batched pass sums in another order
    rows_exact: bool = False
    #: parameter names a learner fits another way (the per-action ridge fits ``bias`` and
    #: ``linear``): :meth:`gradients_batch` may leave their gradients out (DGT does)
    fitted_elsewhere: frozenset[str] = frozenset()

    def __init__(self, n_features: int, n_outputs: int) -> None:
        if n_features < 1 or n_outputs < 1:
            raise ValueError(
                f"n_features and n_outputs must be >= 1, got {n_features}, {n_outputs}"
            )
        self.n_features = int(n_features)
        self.n_outputs = int(n_outputs)
        #: initial value of the outputs; classification sets it to ``logit(1 / K)`` so the
        #: predicted rewards start at the uniform prior (see :func:`reward_prior_logit`)
        self.output_bias = 0.0

    @abstractmethod
    def init_params(self, rng: np.random.Generator) -> Params: ...

    def upgrade_params(self, params: Params) -> Params:
        """Fill parameters that checkpoints of an earlier layout lack (default: none)."""
        return params

    @abstractmethod
    def freeze(self, params: Mapping[str, FloatArray]) -> Any:
        """The inference form used by :meth:`forward` (derived data cached per version)."""

    def freeze_unprepared(self, params: Mapping[str, FloatArray]) -> Any:
        """:meth:`freeze` without building what only serves decisions (the same values
        once :meth:`prepare` or the first decision builds it): for the versions a
        learner passes through within a batch, which no decision reads."""
        return self.freeze(params)

    def prepare(self, frozen: Any) -> Any:
        """``frozen`` (from :meth:`freeze_unprepared`) made what :meth:`freeze` gives."""
        return frozen

    @abstractmethod
    def forward(self, frozen: Any, x: FloatArray) -> ModelOutput: ...

    @abstractmethod
    def forward_batch(self, frozen: Any, x: FloatArray) -> FloatArray:
        """Raw outputs for a batch ``(B, d)`` -> ``(B, K)``."""

    def forward_rows(self, frozen: Any, x: FloatArray) -> BatchOutput:
        """:meth:`forward` of every row of ``x`` ``(B, d)``, stacked (the same numbers).

        The default calls :meth:`forward` per row; families override it with one
        batched pass.
        """
        rows = [self.forward(frozen, row) for row in x]
        if not rows:
            return BatchOutput(output=np.zeros((0, self.n_outputs)))
        first = rows[0]
        scores = [r.scores for r in rows if r.scores is not None]
        return BatchOutput(
            output=np.stack([r.output for r in rows]),
            leaf=None if first.leaf is None else np.array([r.leaf for r in rows], dtype=np.int64),
            extras={k: np.array([r.extras[k] for r in rows]) for k in first.extras},
            scores=np.stack(scores) if len(scores) == len(rows) else None,
        )

    def gradients(
        self,
        params: Mapping[str, FloatArray],
        x: FloatArray,
        upstream: UpstreamFn,
        rng: np.random.Generator,
    ) -> Params:
        """``d loss / d params`` at ``params`` for one example; ``upstream`` gives ``d loss / d output``."""
        return self.gradients_batch(params, x[None, :], [upstream], rng)

    @abstractmethod
    def gradients_batch(
        self,
        params: Mapping[str, FloatArray],
        x: FloatArray,
        upstreams: Sequence[UpstreamFn],
        rng: np.random.Generator,
    ) -> Params:
        """Summed ``d loss / d params`` of a batch ``(B, d)``, example ``b`` with ``upstreams[b]``.

        All examples are differentiated at the same ``params``, in one vectorised pass;
        a family that draws from ``rng`` (bagging weights) draws in example order.
        """

    def leaf_layout(self) -> tuple[int, int] | None:
        """``(n_trees, n_leaves)`` of a family whose examples each reach one leaf per
        tree (per-leaf statistics are counted for it), None for one without leaves."""
        return None

    def leaves_batch(self, frozen: Any, x: FloatArray) -> IntArray:
        """The leaf each row of ``x`` ``(B, d)`` reaches in each tree -> ``(T, B)``
        (a family with a :meth:`leaf_layout` overrides it)."""
        raise NotImplementedError(f"{self.kind} has no leaves")

    def export(self, frozen: Any) -> dict[str, Any]:
        """A JSON-ready description of the model for inspection."""
        return {"kind": self.kind}

    def to_config(self) -> dict[str, Any]:
        return {"kind": self.kind, "n_features": self.n_features, "n_outputs": self.n_outputs}


def reward_prior_logit(n_actions: int) -> float:
    """``logit(1 / K)``: the output whose sigmoid is the reward of a uniform guess.

    Starting every leaf there (rather than at 0, a predicted reward of 1/2) keeps eq. 8
    from spending its first thousands of rounds pushing every played action down.
    """
    return float(np.log(1.0 / max(n_actions - 1, 1)))


def reward_prior(n_actions: int, link: str) -> float:
    """The output whose predicted reward is that of a uniform guess, ``1 / K``.

    ``1 / K`` itself for the identity link, :func:`reward_prior_logit` for the sigmoid.
    """
    return 1.0 / n_actions if link == "identity" else reward_prior_logit(n_actions)
