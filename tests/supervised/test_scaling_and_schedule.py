"""Folding the scalers into the frozen tree, the cosine-restart schedule, the penalty, config bounds."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from banditree.models.dgt.frozen import FrozenTree
from banditree.models.dgt.tree import DGTree
from banditree.supervised import FeatureStandardizer, TargetMinMax, TrainingConfig, fold_scalers
from banditree.supervised.autograd_trainer import make_scheduler, weight_penalty


def test_folded_tree_on_raw_inputs_matches_tree_on_standardised_inputs() -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(loc=[5.0, -3.0, 100.0], scale=[2.0, 0.1, 30.0], size=(400, 3))
    x[:, 1] = 7.0  # a constant feature keeps std 1
    scaler = FeatureStandardizer.fit(x)
    assert scaler.std[1] == 1.0
    tree = FrozenTree(weights=rng.normal(size=(15, 4)), theta=rng.uniform(size=(16, 1)))
    target = TargetMinMax.fit(np.array([10.0, 30.0, 20.0]))
    folded = fold_scalers(tree, scaler, target)
    z = scaler.transform(x)
    activations = z @ tree.weights[:, :-1].T + tree.weights[:, -1]  # (n, 15)
    folded_activations = x @ folded.weights[:, :-1].T + folded.weights[:, -1]
    np.testing.assert_allclose(folded_activations, activations, atol=1e-9)
    np.testing.assert_array_equal(folded.leaves(x), tree.leaves(z))
    np.testing.assert_allclose(folded.theta, tree.theta * 20.0 + 10.0)
    np.testing.assert_allclose(target.inverse(target.transform(np.array([12.5]))), [12.5])


def test_constant_target_keeps_unit_span() -> None:
    scaler = TargetMinMax.fit(np.full(5, 3.0))
    assert scaler.span == 1.0
    np.testing.assert_array_equal(scaler.transform(np.full(2, 3.0)), [0.0, 0.0])


def test_cosine_schedule_has_exactly_the_configured_restarts() -> None:
    config = TrainingConfig(learning_rate=1e-2, min_learning_rate=1e-4, restarts=3)
    param = torch.nn.Parameter(torch.zeros(1))
    optimizer = torch.optim.RMSprop([param], lr=config.learning_rate)
    scheduler = make_scheduler(optimizer, steps_total=400, config=config)
    assert scheduler is not None
    rates = []
    for _ in range(400):
        rates.append(optimizer.param_groups[0]["lr"])
        optimizer.step()
        scheduler.step()
    jumps = np.flatnonzero(np.diff(rates) > 0) + 1
    np.testing.assert_array_equal(jumps, [100, 200, 300])
    assert rates[0] == pytest.approx(1e-2) and min(rates) >= 1e-4
    assert rates[99] < 2e-4
    assert make_scheduler(optimizer, 400, TrainingConfig(restarts=None)) is None


@pytest.mark.parametrize("kind", ["l1", "l2"])
def test_weight_penalty_covers_every_node_layer(kind: str) -> None:
    tree = DGTree(3, 2, 2, hidden=(4,))
    config = TrainingConfig(regularization=kind, reg_strength=1e-3)  # type: ignore[arg-type]
    with torch.no_grad():
        expected = sum(
            float(w.abs().sum() if kind == "l1" else w.square().sum()) for w in tree.layers
        )
        penalty = float(weight_penalty(tree, config))
    assert penalty == pytest.approx(1e-3 * expected)


@pytest.mark.parametrize(
    "field,value,message",
    [
        ("height", 0, "height must be an integer in [1, 12]"),
        ("height", 13, "height must be an integer in [1, 12]"),
        ("hidden", "wide", "hidden must be 'table12'"),
        ("hidden", (8, 0), "hidden widths must be integers >= 1"),
        ("epochs", 0, "epochs must be an integer >= 1"),
        ("batch_size", 0, "batch_size must be an integer >= 1"),
        ("learning_rate", 0.0, "learning_rate must be [1e-12, 10.0]"),
        ("learning_rate", float("nan"), "learning_rate must be"),
        ("min_learning_rate", 0.5, "min_learning_rate must be [0.0, 0.01]"),
        ("momentum", 1.0, "momentum must be [0.0, 0.99]"),
        ("grad_clip_norm", -1.0, "grad_clip_norm must be >= 0.0"),
        ("restarts", -1, "restarts must be None or an integer >= 0"),
        ("regularization", "l3", "regularization must be 'l1' or 'l2'"),
        ("reg_strength", -1e-5, "reg_strength must be [0.0, 1.0]"),
    ],
)
def test_config_refuses_out_of_bound_settings(field: str, value: object, message: str) -> None:
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        TrainingConfig(**{field: value})  # type: ignore[arg-type]


def test_table12_preset_gives_three_layers() -> None:
    config = TrainingConfig(height=4, hidden="table12")
    tree = DGTree(5, 2, config.height, config.hidden)
    assert [tuple(w.shape) for w in tree.layers] == [(600, 6), (600, 600), (15, 600)]
