"""``BANDITREE_KERNEL`` and a missing build: the reference on purpose, never by accident."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

PROBE = """
import sys
from banditree import kernel
from banditree.learners import Feedback, build_learner
print("ACTIVE", kernel.ACTIVE)
try:
    learner = build_learner({"kind": "dgt", "n_features": 3, "n_actions": 2})
except kernel.KernelUnavailable as err:
    print("REFUSED", err)
else:
    print("BUILT", learner._native, learner._optimizer.kernel is not None)
import banditree.ranking
try:
    ranking = build_learner({"task": "ranking"})
except kernel.KernelUnavailable as err:
    print("RANKING REFUSED", err)
else:
    ranking.learn(ranking.rank({"u": 1.0}, [("a", {"x": 1.0}), ("b", {"x": 2.0})], "e0"),
                  Feedback(loss=0.5))
    print("RANKING", ranking._served().kernel is not None)
"""

#: imported first: the compiled module cannot be found (a checkout never built)
BLOCK = """
import importlib.abc, sys
class Missing(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "banditree.kernel._native":
            raise ImportError("no compiled kernel in this test")
        return None
sys.meta_path.insert(0, Missing())
"""


def probe(env: dict[str, str], block: bool = False) -> str:
    environ = {k: v for k, v in os.environ.items() if k != "BANDITREE_KERNEL"}
    environ.update(env, PYTHONPATH=str(ROOT))
    code = (BLOCK if block else "") + PROBE
    done = subprocess.run(
        [sys.executable, "-c", code], env=environ, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_the_default_is_the_native_kernel() -> None:
    out = probe({})
    assert "ACTIVE native" in out and "BUILT True True" in out
    assert "RANKING True" in out  # a ranking model decides by the kernel too


def test_reference_runs_numpy_on_purpose() -> None:
    out = probe({"BANDITREE_KERNEL": "reference"})
    assert "ACTIVE reference" in out and "BUILT False False" in out
    assert "RANKING False" in out


def test_a_missing_build_refuses_to_build_a_learner() -> None:
    out = probe({}, block=True)
    assert "ACTIVE unavailable" in out
    assert "REFUSED the compiled kernel does not import" in out
    assert "BANDITREE_KERNEL=reference" in out  # the way out, named
    assert "RANKING REFUSED the compiled kernel does not import" in out


def test_a_missing_build_is_fine_when_numpy_is_asked_for() -> None:
    out = probe({"BANDITREE_KERNEL": "reference"}, block=True)
    assert "ACTIVE reference" in out and "BUILT False False" in out
    assert "RANKING False" in out


def test_an_unknown_setting_is_refused_with_the_choices() -> None:
    out = probe({"BANDITREE_KERNEL": "fast"})
    assert "ACTIVE unavailable" in out
    assert "REFUSED BANDITREE_KERNEL must be 'native' or 'reference', got 'fast'" in out
