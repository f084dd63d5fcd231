"""Random hinge forest on Letter: supervised test error (paper Table 3) and bandit accuracy.

Supervised: a 100-tree depth-10 hinge forest on a pool of 100 learnable inner-product
features, online standardisation in front of the thresholds, a linear layer to the
26 classes, Adam (lr 0.005, batch 53) as in seed 001 section 5 (paper: 2.56% test
error, best over model states), beside a depth-10 DGT tree trained with RMSprop and
cross entropy on the same split.  Bandit: one pass over the training set with the
eq. 8 estimator and epsilon-greedy, hinge against DGT-Bandit, with act+learn rates.
TEL on Letter: ``python -m benchmarks.quality.tel_accuracy --datasets letter``.

Run: ``python -m benchmarks.quality.hinge_letter [--epochs 30] [--bandit-rounds 0]``.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from torch import nn

from banditree.datasets import load
from banditree.learners import Feedback, build_learner
from banditree.models import DGTree
from banditree.models.hinge.modules import PooledHingeForest
from banditree.supervised import FeatureStandardizer


def test_error(model: nn.Module, x: torch.Tensor, y: torch.Tensor) -> float:
    model.eval()
    with torch.no_grad():
        wrong = (model(x).argmax(1) != y).float().mean().item()
    model.train()
    return wrong


def train_supervised(
    model: nn.Module,
    optimizer: torch.optim.Optimizer,
    data: tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor],
    epochs: int,
    batch_size: int,
    seed: int,
) -> tuple[float, float, float]:
    """Returns (final test error, best test error over epochs, seconds per epoch)."""
    x_train, y_train, x_test, y_test = data
    gen = torch.Generator().manual_seed(seed)
    errors = []
    start = time.perf_counter()
    for _ in range(epochs):
        perm = torch.randperm(len(y_train), generator=gen)
        for i in range(0, len(perm), batch_size):
            b = perm[i : i + batch_size]
            optimizer.zero_grad()
            nn.functional.cross_entropy(model(x_train[b]), y_train[b]).backward()
            optimizer.step()
        errors.append(test_error(model, x_test, y_test))
    seconds = (time.perf_counter() - start) / max(epochs, 1)
    return errors[-1], min(errors), seconds


def supervised(epochs: int, seed: int) -> None:
    ds = load("letter")
    scaler = FeatureStandardizer.fit(ds.X_train)
    data = (
        torch.tensor(scaler.transform(ds.X_train), dtype=torch.float32),
        torch.tensor(ds.y_train, dtype=torch.long),
        torch.tensor(scaler.transform(ds.X_test), dtype=torch.float32),
        torch.tensor(ds.y_test, dtype=torch.long),
    )
    print(f"letter: {len(ds.y_train)} train / {len(ds.y_test)} test, {epochs} epochs")
    for ferns in (False, True):
        torch.manual_seed(seed)
        hinge = nn.Sequential(
            PooledHingeForest(ds.n_features, 100, 100, 10, ferns=ferns, reduction="none"),
            nn.Linear(100, ds.n_classes),
        )
        opt = torch.optim.Adam(hinge.parameters(), lr=0.005, betas=(0.9, 0.999))
        final, best, sec = train_supervised(hinge, opt, data, epochs, 53, seed)
        name, paper = ("hinge ferns", 2.78) if ferns else ("hinge forest", 2.56)
        print(
            f"{name:>13} 100x depth 10, pool 100: test error final {100 * final:.2f}% "
            f"best {100 * best:.2f}% (paper {paper}%), {sec:.1f} s/epoch"
        )
    torch.manual_seed(seed)
    dgt = DGTree(ds.n_features, ds.n_classes, height=10)
    dgt_opt = torch.optim.RMSprop(dgt.parameters(), lr=0.01)
    final, best, sec = train_supervised(dgt, dgt_opt, data, epochs, 128, seed)
    print(
        f"{'DGT':>13} depth 10: test error final {100 * final:.2f}% best {100 * best:.2f}% "
        f"(DGT paper Table 2: {100 - 86.13:.2f}%), {sec:.1f} s/epoch"
    )


def bandit(rounds: int, seed: int) -> None:
    ds = load("letter")
    n = len(ds.y_train) if rounds <= 0 else min(rounds, len(ds.y_train))
    order = np.random.default_rng(seed).permutation(len(ds.y_train))[:n]
    base = {"n_features": ds.n_features, "n_actions": ds.n_classes, "seed": seed}
    runs = {
        "DGT-Bandit h6": {"kind": "dgt", "learning_rate": 0.01},
        "hinge 10x d6": {"kind": "hinge", "learning_rate": 0.01},
        "hinge 30x d6 pool 64": {
            "kind": "hinge",
            "learning_rate": 0.01,
            "n_trees": 30,
            "options": {"pool": 64},
        },
        "hinge ferns 30x d6": {
            "kind": "hinge",
            "learning_rate": 0.01,
            "n_trees": 30,
            "options": {"ferns": True},
        },
    }
    print(f"bandit letter: one pass of {n} rounds, epsilon-greedy 0.3, eq. 8")
    rates = {}
    for name, cfg in runs.items():
        learner = build_learner({**base, **cfg})
        correct = 0.0
        start = time.perf_counter()
        for i in order:
            d = learner.act(ds.X_train[i])
            loss = float(d.action != ds.y_train[i])
            learner.learn(d, Feedback(loss=loss))
            correct += 1.0 - loss
        rate = n / (time.perf_counter() - start)
        rates[name] = rate
        test = float((learner.predict(ds.X_test) == ds.y_test).mean())
        print(
            f"{name:>22}: progressive accuracy {100 * correct / n:.2f}%, "
            f"greedy test accuracy {100 * test:.2f}%, {rate:.0f} act+learn/s "
            f"({rate / rates['DGT-Bandit h6']:.2f}x DGT-Bandit)"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--bandit-rounds", type=int, default=0, help="0 = the whole train set")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--skip-supervised", action="store_true")
    args = parser.parse_args()
    torch.set_num_threads(1)
    bandit(args.bandit_rounds, args.seed)
    if not args.skip_supervised:
        supervised(args.epochs, args.seed)


if __name__ == "__main__":
    main()
