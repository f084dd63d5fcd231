"""Vowpal Wabbit's contextual-bandit algorithms as baselines.

:class:`VWBandit` drives ``--cb_explore K --epsilon e`` one example at a time on VW's
text input, :class:`VWPolicy` any algorithm of :data:`VW_ALGORITHMS` (the benchmarks use
them directly, so that they can time the text formatting apart);
:class:`VowpalWabbitAgent` is the simulator's agent on numeric contexts around a
:class:`VWPolicy`: ``vw`` is VW's strongest explorer on the bundled sets (RegCB-opt,
:data:`SIMULATOR_VW`), ``vw-epsilon`` the DGT paper's ``--epsilon 0.3``.
``vowpalwabbit`` is optional (the ``vw`` / ``bench`` extras).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from banditree.explore import event_uniforms, sample_action
from banditree.learners import Decision, Feedback


def vowpalwabbit_available() -> bool:
    """True when the optional ``vowpalwabbit`` package imports."""
    try:
        import vowpalwabbit  # noqa: F401
    except ImportError:
        return False
    return True


def vw_line(row: Sequence[float]) -> str:
    """VW text features of one numeric context: ``| f0:x0 f1:x1 ...`` (zeros omitted).

    The names must not be bare integers: VW reads those as raw weight indices, which
    collide across the per-action weights of ``--cb_explore`` and stop it learning.
    """
    return "| " + " ".join([f"f{j}:{v!r}" for j, v in enumerate(row) if v != 0.0])


def vw_arguments(
    n_actions: int, epsilon: float, seed: int, learning_rate: float | None = None
) -> str:
    """The VW command line of this baseline."""
    args = f"--cb_explore {n_actions} --epsilon {epsilon} --random_seed {seed} --quiet"
    return args if learning_rate is None else f"{args} -l {learning_rate}"


class VWBandit:
    """``vw --cb_explore K --epsilon eps`` driven one example at a time through pyvw.

    The caller's uniform numbers sample the action from VW's pmf, so VW and our
    learners can share the exploration randomness of a stream.
    """

    def __init__(
        self,
        n_actions: int,
        epsilon: float = 0.3,
        seed: int = 0,
        learning_rate: float | None = None,
    ) -> None:
        import vowpalwabbit

        self.n_actions = n_actions
        self.arguments = vw_arguments(n_actions, epsilon, seed, learning_rate)
        self.vw = vowpalwabbit.Workspace(self.arguments)

    def act(self, features: str, u: float) -> tuple[int, float, int]:
        """``(action, propensity, greedy action)`` for one context in VW text form."""
        pmf = np.asarray(self.vw.predict(features), dtype=np.float64)
        action = sample_action(pmf, u)
        return action, float(pmf[action] / pmf.sum()), int(np.argmax(pmf))

    def learn(self, features: str, action: int, propensity: float, loss: float) -> None:
        """Learn ``action:loss:propensity`` (VW's 1-based action) on ``features``."""
        self.vw.learn(f"{action + 1}:{loss!r}:{propensity!r} {features}")

    def greedy(self, features: str) -> int:
        """The action of largest probability (VW's exploit choice)."""
        return int(np.argmax(self.vw.predict(features)))

    def close(self) -> None:
        self.vw.finish()


#: Vowpal Wabbit's contextual-bandit algorithms that the benchmark compares against
#: (``{k}``: the number of actions; ``_adf`` ones read the context in namespace ``s``
#: and the action id in namespace ``a``, crossed by ``-q sa``).  RegCB-opt and Cover-NU
#: are the two strongest of Bietti, Agarwal and Langford's bake-off (JMLR 2021), with
#: their grid's values: mellowness (C0) 0.1 (VW's default) and 0.01; cover 4 with
#: psi 0.1 and no uniform share.
VW_ALGORITHMS: dict[str, str] = {
    "vw_adf_squarecb": "--cb_explore_adf --squarecb -q sa",
    "vw_bag5": "--cb_explore {k} --bag 5",
    "vw_eps0.05": "--cb_explore {k} --epsilon 0.05",
    "vw_adf_eps0.05": "--cb_explore_adf --epsilon 0.05 -q sa",
    "vw_cover4": "--cb_explore {k} --cover 4",
    "vw_adf_regcbopt": "--cb_explore_adf --regcbopt --mellowness 0.1 -q sa",
    "vw_adf_regcbopt_m0.01": "--cb_explore_adf --regcbopt --mellowness 0.01 -q sa",
    "vw_adf_cover4_nu": "--cb_explore_adf --cover 4 --psi 0.1 --nounif -q sa",
}

VWExample = str | list[str]


class VWPolicy:
    """Any ``--cb_explore`` / ``--cb_explore_adf`` algorithm of VW, one example at a time.

    :meth:`example` formats a numeric context once (outside any timing);
    :meth:`pmf` and :meth:`learn` are the act and learn calls.
    """

    def __init__(self, n_actions: int, algorithm: str, seed: int = 0) -> None:
        import vowpalwabbit

        self.n_actions = n_actions
        self.adf = "--cb_explore_adf" in algorithm
        self.arguments = f"{algorithm.format(k=n_actions)} --random_seed {seed} --quiet"
        self.vw = vowpalwabbit.Workspace(self.arguments)
        self._action_lines = [f"|a a{k}" for k in range(n_actions)]

    def example(self, row: Sequence[float]) -> VWExample:
        """VW text of one context (a shared line plus one line per action for ``adf``)."""
        if not self.adf:
            return vw_line(row)
        shared = "shared |s " + " ".join([f"f{j}:{v!r}" for j, v in enumerate(row) if v != 0.0])
        return [shared, *self._action_lines]

    def example_of(self, features: str) -> VWExample:
        """:meth:`example` of VW feature text given whole (``f0:1.5 f3=2``: categories
        as one-hot names)."""
        if not self.adf:
            return f"| {features}"
        return [f"shared |s {features}", *self._action_lines]

    def pmf(self, example: VWExample) -> np.ndarray:
        """VW's probability of each action (action order)."""
        pmf = np.asarray(self.vw.predict(example), dtype=np.float64)
        return pmf / pmf.sum()

    def learn(self, example: VWExample, action: int, propensity: float, loss: float) -> None:
        """Learn the loss of ``action`` played with ``propensity``."""
        if self.adf:
            lines = list(example)
            lines[action + 1] = f"0:{loss!r}:{propensity!r} {lines[action + 1]}"
            self.vw.learn(lines)
        else:
            self.vw.learn(f"{action + 1}:{loss!r}:{propensity!r} {example}")

    def close(self) -> None:
        self.vw.finish()


#: the simulator's VW baselines: ``vw`` RegCB-opt at mellowness 0.01 (VW's best on 10 of
#: the 14 bundled sets and on 5 of the 7 of the tuning half, benchmarks/results/
#: bandit_rivals.md), ``vw-epsilon`` the DGT paper's rival (``{eps}``: ``--explore`` or
#: :data:`PAPER_EPSILON`)
SIMULATOR_VW: dict[str, str] = {
    "vw": VW_ALGORITHMS["vw_adf_regcbopt_m0.01"],
    "vw-epsilon": "--cb_explore {k} --epsilon {eps}",
}
#: the DGT paper's epsilon for ``vw-epsilon``
PAPER_EPSILON = 0.3


def simulator_vw_arguments(
    name: str, n_actions: int, epsilon: float | None = None, learning_rate: float | None = None
) -> str:
    """The algorithm text of the simulator's baseline ``name`` (without the seed)."""
    if name not in SIMULATOR_VW:
        raise ValueError(f"unknown VW baseline {name!r}; known: {', '.join(SIMULATOR_VW)}")
    eps = PAPER_EPSILON if epsilon is None else epsilon
    text = SIMULATOR_VW[name].replace("{eps}", repr(eps))
    text = text.replace("{k}", str(n_actions))
    return text if learning_rate is None else f"{text} -l {learning_rate!r}"


class VowpalWabbitAgent:
    """The simulator's agent around a :class:`VWPolicy` (numeric contexts).

    The action is sampled from VW's pmf with the uniform fixed by ``(seed, event_id)``
    and learned with its loss and probability.  The greedy action (for held-out
    scoring) is the pmf's argmax.  ``scale``: ``(mean, sd)`` per feature; VW reads
    ``(x - mean) / sd`` (VW's SGD is far from scale-free: on satimage's 0-255 pixels
    RegCB-opt's (mellowness 0.1) progressive loss is 0.76 after 1,000 rounds raw, 0.37
    z-scored).
    """

    def __init__(
        self,
        n_actions: int,
        *,
        algorithm: str,
        seed: int,
        scale: tuple[np.ndarray, np.ndarray] | None = None,
    ) -> None:
        self.policy = VWPolicy(n_actions, algorithm, seed)
        self.seed = seed
        self.scale = scale

    def _example(self, context: Sequence[float]) -> VWExample:
        if self.scale is None:
            return self.policy.example(context)
        mean, sd = self.scale
        return self.policy.example(((np.asarray(context) - mean) / sd).tolist())

    def act(self, context: Sequence[float] | np.ndarray, event_id: str | None = None) -> Decision:
        x = tuple(float(v) for v in context)
        u, _ = event_uniforms(self.seed, event_id or "")
        pmf = self.policy.pmf(self._example(x))
        action = sample_action(pmf, u)
        greedy = int(np.argmax(pmf))
        return Decision(
            event_id=event_id or "",
            context=x,
            model_version=0,
            action=action,
            propensity=float(pmf[action]),
            greedy_action=greedy,
            explored=action != greedy,
        )

    def learn(self, decision: Decision, feedback: Feedback) -> bool:
        if decision.action is None or feedback.loss is None:
            raise ValueError("the VW baseline learns from an action and a single loss")
        if isinstance(decision.context, dict):
            raise ValueError("the VW baseline reads numeric contexts")
        example = self._example(decision.context)
        self.policy.learn(example, decision.action, decision.propensity, feedback.loss)
        return True

    def predict(self, contexts: np.ndarray) -> np.ndarray:
        rows = np.asarray(contexts, dtype=np.float64).tolist()
        greedy = [int(np.argmax(self.policy.pmf(self._example(x)))) for x in rows]
        return np.array(greedy, dtype=np.float64)

    def close(self) -> None:
        self.policy.close()
