"""VW argument strings <-> a ranking model's explorer; the explorer set on a live model."""

from __future__ import annotations

import pytest

from banditree.core import Feedback
from banditree.learners import LearnerConfig, build_learner
from banditree.persistence import dumps, loads
from banditree.ranking import RankingModel
from banditree.ranking.vw_policy import ExplorerSettings, parse_policy_arguments, policy_arguments


@pytest.mark.parametrize(
    "settings",
    [
        ExplorerSettings("epsilon_greedy", 0.2),
        ExplorerSettings("epsilon_greedy", 0.0),
        ExplorerSettings("squarecb", 50.0, 0.5),
        ExplorerSettings("squarecb"),
        ExplorerSettings("fastcb", 10.0, None),
        ExplorerSettings("softmax", 0.25),
    ],
)
def test_arguments_round_trip(settings: ExplorerSettings) -> None:
    assert parse_policy_arguments(policy_arguments(settings)) == settings


def test_vw_forms_map_onto_explorers() -> None:
    assert parse_policy_arguments("--cb_explore_adf --epsilon=0.1 --dsjson") == ExplorerSettings(
        "epsilon_greedy", 0.1
    )
    assert parse_policy_arguments("--squarecb --gamma_scale 10") == ExplorerSettings(
        "squarecb", 10.0
    )
    assert parse_policy_arguments("--softmax --lambda 4") == ExplorerSettings("softmax", 0.25)


@pytest.mark.parametrize(
    ("arguments", "named"),
    [
        ("--cb_explore_adf --epsilon 0.2 -q ::", "'-q' is not accepted: banditree crosses"),
        ("--cb_explore_adf --epsilon 0.2 --cb_type mtr", "'--cb_type' is not accepted"),
        ("--cb_explore_adf --bag 5", "'--bag' is not accepted: bagging"),
        ("--cb_explore_adf --frobnicate", "'--frobnicate' is not accepted: it has no counterpart"),
        ("--cb_explore_adf", "name an explorer"),
        ("--epsilon 1.5", "--epsilon must be in [0, 1], got 1.5"),
        ("--epsilon", "--epsilon needs a number, got ''"),
        ("--epsilon nan", "--epsilon must be a finite number >= 0"),
        ("--epsilon 0.1 --squarecb", "one explorer at a time"),
        ("--softmax", "--softmax needs --lambda"),
        ("--softmax --lambda 1e-9", "--softmax needs --lambda L >= 1e-06"),
        ("--squarecb --gamma_scale 2e6", "--gamma_scale must be <= 1e+06"),
        ("--epsilon 0.1 --gamma_scale 3", "--gamma_scale is for --squarecb or --fastcb"),
        ("--squarecb --gamma_exponent 3", "--gamma_exponent must be in [0, 2]"),
        ("--epsilon '0.1", "cannot be split into words"),
    ],
)
def test_refusals_name_the_argument_and_why(arguments: str, named: str) -> None:
    with pytest.raises(ValueError, match=r"^arguments: ") as refused:
        parse_policy_arguments(arguments)
    assert named in str(refused.value)


def test_a_decaying_epsilon_uses_banditrees_own_argument() -> None:
    settings = ExplorerSettings("epsilon_greedy", 0.2, 0.5)
    assert policy_arguments(settings).endswith("--epsilon 0.2 --explorer_exponent 0.5")
    assert parse_policy_arguments(policy_arguments(settings)) == settings
    with pytest.raises(ValueError, match="--explorer_exponent is for --epsilon or --softmax"):
        parse_policy_arguments("--squarecb --explorer_exponent 0.5")


def _trained() -> RankingModel:
    model = build_learner(LearnerConfig.model_validate({"task": "ranking"}))
    assert isinstance(model, RankingModel)
    actions = [("a", {"k": "x"}), ("b", {"k": "y"})]
    for t in range(40):
        d = model.rank({"h": t % 2}, actions, f"e{t}")
        model.learn(d, Feedback(loss=float(d.action != t % 2)))
    return model


def test_set_explorer_changes_decisions_and_survives_a_checkpoint() -> None:
    model = _trained()
    actions = [("a", {"k": "x"}), ("b", {"k": "y"})]
    before = model.rank({"h": 0}, actions, "probe").ranking
    assert before is not None and min(before["probabilities"]) > 0  # fastcb explores
    model.set_explorer("epsilon_greedy", 0.0)
    greedy = model.rank({"h": 0}, actions, "probe").ranking
    assert greedy is not None and sorted(greedy["probabilities"]) == [0.0, 1.0]
    restored = loads(dumps(model))
    assert isinstance(restored, RankingModel)
    assert restored.explorer_settings == ("epsilon_greedy", 0.0, None)
    assert restored.config() == model.config()  # the config keeps the created explorer
    assert restored.config()["explorer"] == "fastcb"
    again = restored.rank({"h": 0}, actions, "probe").ranking
    assert again is not None and again["probabilities"] == greedy["probabilities"]


def test_set_explorer_refuses_a_bad_setting_and_keeps_the_old_one() -> None:
    model = _trained()
    with pytest.raises(ValueError, match="epsilon"):
        model.set_explorer("epsilon_greedy", 3.0)
    assert model.explorer_settings == ("fastcb", None, None)
