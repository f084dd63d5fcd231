"""The classification default's kind is one constant, ``boosted``.

``defaults.CLASSIFICATION_KIND`` is what a classification config that names no kind
gets.  These tests check that it is ``boosted`` and what every other kind of model a
default config builds keeps: apprentice mode (which boosted refuses) stays on the
single tree, ranking and regression keep their own, a warm start from a trained tree
builds a tree, and a stored config keeps the kind it was stored with (a model created
while the default was dgt stays a dgt model).  The service's features on a boosted
model: ``tests/service/http/test_boosted_routes.py``.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from pydantic import ValidationError

import banditree.ranking  # noqa: F401  (registers the ranking task's builder)
from banditree.learners import Feedback, LearnerConfig, build_learner
from banditree.learners.apprentice import Apprentice
from banditree.learners.boosted import BoostedBandit
from banditree.learners.config import defaults
from service.domain.schemas import ModelCreate


@pytest.fixture
def boosted_default() -> None:
    assert defaults.CLASSIFICATION_KIND == "boosted"


def test_the_default_kind_reads_the_constant(monkeypatch: pytest.MonkeyPatch) -> None:
    config = LearnerConfig(n_features=3, n_actions=2)
    assert (config.kind, config.n_trees) == ("boosted", defaults.BOOSTED_TREES)
    assert "kind" not in config.model_fields_set
    monkeypatch.setattr(defaults, "CLASSIFICATION_KIND", "dgt")  # the one switch
    assert LearnerConfig(n_features=3, n_actions=2).kind == "dgt"


@pytest.mark.usefixtures("boosted_default")
def test_the_default_builds_a_boosted_model_that_learns() -> None:
    learner = build_learner({"n_features": 2, "n_actions": 3, "seed": 1})
    assert isinstance(learner, BoostedBandit)
    rng = np.random.default_rng(0)
    for _ in range(150):  # past the first fit
        x = rng.normal(size=2)
        decision = learner.act(x)
        learner.learn(decision, Feedback(loss=float(decision.action != int(x[0] > 0))))
    assert learner.fits >= 1


@pytest.mark.usefixtures("boosted_default")
def test_apprentice_mode_keeps_the_single_tree() -> None:
    body: dict[str, Any] = {"n_features": 3, "n_actions": 2, "mode": "apprentice"}
    config = LearnerConfig.model_validate(body)
    assert (config.kind, config.n_trees) == (defaults.APPRENTICE_KIND, 10)
    assert isinstance(build_learner(config), Apprentice)
    stored = LearnerConfig.from_stored(config.to_dict())
    assert stored.kind == defaults.APPRENTICE_KIND  # the restored model is the same tree
    created, _ = ModelCreate.model_validate(body).split()
    assert created.kind == defaults.APPRENTICE_KIND
    with pytest.raises(ValidationError, match="mode: apprentice needs a single tree"):
        LearnerConfig.model_validate({**body, "kind": "boosted"})  # named: refused


@pytest.mark.usefixtures("boosted_default")
def test_ranking_regression_and_a_warm_start_keep_their_kinds() -> None:
    assert LearnerConfig(task="ranking").kind == "dgt"
    assert LearnerConfig(task="regression", n_features=3).kind == "dgt_forest"
    warm = LearnerConfig(n_features=3, n_actions=2).for_initial_model()
    assert warm.kind == defaults.INITIAL_MODEL_KIND


@pytest.mark.usefixtures("boosted_default")
def test_a_stored_config_keeps_its_kind(monkeypatch: pytest.MonkeyPatch) -> None:
    stored = LearnerConfig(kind="dgt", n_features=3, n_actions=2).to_dict()
    assert LearnerConfig.from_stored(stored).kind == "dgt"
    with monkeypatch.context() as before:  # created without a kind while dgt was the default
        before.setattr(defaults, "CLASSIFICATION_KIND", "dgt")
        old = LearnerConfig(n_features=3, n_actions=2).to_dict()
    assert old["kind"] == "dgt" and LearnerConfig.from_stored(old).kind == "dgt"
    assert not isinstance(build_learner(LearnerConfig.from_stored(old)), BoostedBandit)


@pytest.mark.parametrize(
    "body,match",
    [
        ({"task": "ranking", "kind": "boosted"}, "kind: boosted is for classification; a ranking"),
        (
            {"task": "regression", "kind": "boosted", "n_features": 3},
            "kind: boosted is for classification, not task regression",
        ),
    ],
)
def test_boosted_outside_classification_is_refused_naming_kind(
    body: dict[str, Any], match: str
) -> None:
    with pytest.raises(ValidationError, match=match):
        LearnerConfig.model_validate(body)
    with pytest.raises(ValidationError, match=match):
        ModelCreate.model_validate(body)


def test_a_ranking_model_stored_with_kind_boosted_still_loads() -> None:
    stored = LearnerConfig(task="ranking").to_dict()
    stored["kind"] = "boosted"  # accepted (and ignored) before the rule
    config = LearnerConfig.from_stored(stored)
    assert (config.task, config.kind) == ("ranking", "dgt")
    assert build_learner(config).task == "ranking"
