"""A numpy RMSprop with torch's semantics, producing new arrays (copy-on-write)."""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from banditree.core.arrays import FloatArray, scalar_array
from banditree.kernel import native
from banditree.models.spec import Params

#: ``np.isfinite(a).all()`` as ``_all(_isfinite(a), None)``: the reduction itself, without
#: ``ndarray.all``'s Python wrapper
_all, _isfinite = np.logical_and.reduce, np.isfinite


class RMSprop:
    """``v = alpha v + (1 - alpha) g^2``; ``p -= lr g / (sqrt(v) + eps)`` (``torch.optim.RMSprop``).

    Optional ``l1`` / ``l2`` penalties are added to the gradient of the names in
    ``regularised``; ``lr_scales`` multiplies the step of the names it lists; the
    names in ``summed`` keep a running SUM of squared gradients instead (AdaGrad:
    a step that decays as the evidence grows).
    :meth:`step` returns NEW arrays and never writes into the parameters it was
    given, so a reader holding the old mapping stays consistent.  A gradient whose
    square is not finite is refused whole (that parameter keeps its value and its
    running average; counted in :attr:`refused`), so the state only ever holds finite
    values.
    """

    def __init__(
        self,
        lr: float = 1e-3,
        alpha: float = 0.99,
        eps: float = 1e-8,
        l1: float = 0.0,
        l2: float = 0.0,
        regularised: tuple[str, ...] = (),
        lr_scales: Mapping[str, float] | None = None,
        summed: tuple[str, ...] = (),
    ) -> None:
        for name, value, lo in (("learning_rate", lr, 0.0), ("l1", l1, 0.0), ("l2", l2, 0.0)):
            if not (math.isfinite(value) and value >= lo):
                raise ValueError(f"{name} must be a finite number >= {lo}, got {value}")
        if not 0.0 <= alpha < 1.0:
            raise ValueError(f"alpha must be in [0, 1), got {alpha}")
        self.lr, self.alpha, self.eps = float(lr), float(alpha), float(eps)
        self.l1, self.l2 = float(l1), float(l2)
        self.regularised = regularised
        self.lr_scales = dict(lr_scales or {})
        self.summed = summed
        self._square_avg: Params = {}
        #: parameter gradients refused for not being finite (their step and state skipped)
        self.refused = 0
        self._scalar_key: tuple[float, float] | None = None
        self._alpha = self._rest = self._eps = scalar_array(0.0)
        self._rate = scalar_array(0.0)
        #: the compiled kernel that steps each parameter (None: numpy, the reference;
        #: raises KernelUnavailable when asked for and missing)
        self.kernel = native()

    def step(self, params: Mapping[str, FloatArray], grads: Mapping[str, FloatArray]) -> Params:
        # one errstate for the whole step (entered per parameter it cost ~1 us each): only
        # the square can overflow (a finite square bounds the step by ``rate / sqrt(1 -
        # alpha)``), and a step that is not finite is refused below or by the learner
        with np.errstate(over="ignore", invalid="ignore"):
            return self._step(params, grads)

    def _step(self, params: Mapping[str, FloatArray], grads: Mapping[str, FloatArray]) -> Params:
        new: Params = {}
        for name, p in params.items():
            g = grads.get(name)
            if g is None:
                new[name] = p
                continue
            if name in self.regularised and (self.l1 or self.l2):
                g = g + self.l2 * p + self.l1 * np.sign(p)
            if self.kernel is not None:
                new[name] = self._kernel_step(name, p, g)
                continue
            g2 = g * g
            if not _all(_isfinite(g2), None):
                # refused whole: the running average is only ever fed finite values (one
                # absurd gradient would otherwise shrink every later step for good)
                self.refused += 1
                new[name] = p
                continue
            adagrad = name in self.summed
            # scalars as 0-d arrays: numpy's faster operand, the same arithmetic
            alpha, rest, eps, rate = self._scalars(self.lr * self.lr_scales.get(name, 1.0))
            if not adagrad:
                g2 *= rest
            v = self._square_avg.get(name)
            if v is None:  # torch starts the average at zero
                v = self._square_avg[name] = g2
            else:  # the optimizer owns v: update it in place (no per-step allocation)
                if not adagrad:
                    v *= alpha
                v += g2
            step = np.sqrt(v)
            step += eps
            np.divide(g, step, out=step)
            step *= rate
            new[name] = p - step  # a NEW array: readers of the old parameters stay consistent
        return new

    def _kernel_step(self, name: str, p: FloatArray, g: FloatArray) -> FloatArray:
        """:meth:`_step`'s update of one parameter by the kernel (the same operations,
        element by element); ``p`` itself when the gradient is refused."""
        assert self.kernel is not None
        kept = self._square_avg.get(name)
        first = kept is None
        # the kernel updates the average in place: a contiguous one (a copy if loaded so)
        v = np.empty(p.shape) if kept is None else np.ascontiguousarray(kept)
        out = np.empty(p.shape)
        rate = self.lr * self.lr_scales.get(name, 1.0)
        adagrad = name in self.summed
        flat = np.ascontiguousarray(p).reshape(-1), np.ascontiguousarray(g).reshape(-1)
        if not self.kernel.rmsprop(
            *flat, v.reshape(-1), out.reshape(-1), self.alpha, self.eps, rate, adagrad, first
        ):
            self.refused += 1
            return p
        if v is not kept:
            self._square_avg[name] = v
        return out

    def _scalars(self, rate: float) -> tuple[FloatArray, FloatArray, FloatArray, FloatArray]:
        """``alpha``, ``1 - alpha``, ``eps`` and ``rate`` as 0-d arrays (the first three
        made again only when an attribute was reassigned)."""
        key = (self.alpha, self.eps)
        if self._scalar_key != key:
            self._scalar_key = key
            self._alpha = scalar_array(self.alpha)
            self._rest = scalar_array(1.0 - self.alpha)
            self._eps = scalar_array(self.eps)
        self._rate[()] = rate
        return self._alpha, self._rest, self._eps, self._rate

    def state_tensors(self) -> Params:
        """Copies of the running averages (later steps update the live ones in place)."""
        return {f"square_avg.{k}": v.copy() for k, v in self._square_avg.items()}

    def load_state_tensors(self, tensors: Mapping[str, FloatArray]) -> None:
        prefix = "square_avg."
        self._square_avg = {
            k[len(prefix) :]: np.array(v) for k, v in tensors.items() if k.startswith(prefix)
        }
