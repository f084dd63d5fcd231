"""Accuracy of TEL beside supervised DGT, and TEL-Bandit beside DGT-Bandit.

Supervised: a batch-norm followed by TEL (paper section 4.1 architecture: 10 trees of
depth 4; smooth-step gamma = 1), trained with Adam and cross-entropy, against a
supervised DGT tree (height 6, plain ``L = 1``) trained with RMSprop and
cross-entropy on standardised inputs.  Test accuracy and one-vs-rest macro AUC on
seeded 80/20 splits (the paper's Table 3 uses 70/30 splits, 15 repetitions, tuned
hyperparameters and reports AUC).

Bandit: one pass over Letter's training split in a seeded random order with
0/1 loss feedback only (single-pass progressive accuracy), kinds ``tel`` and ``dgt``
with the same explorer, estimator and learning rate.

Run from the repository root::

    python -m benchmarks.quality.tel_accuracy
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import torch
from sklearn.metrics import roc_auc_score
from torch import Tensor, nn

from banditree.datasets import Dataset, load
from banditree.learners import Feedback, build_learner
from banditree.models.tel.layer import TEL
from banditree.supervised import DGTClassifier, FeatureStandardizer, TrainingConfig

#: Test AUC of TEL in the paper's Table 3 (seed 003), for the bundled datasets it lists.
PAPER_TABLE3_TEL_AUC = {"optdigits": "1.0 +- 0.0", "satimage": "0.99 +- 0.0"}


def tensors(ds: Dataset) -> tuple[Tensor, Tensor, Tensor, Tensor]:
    scaler = FeatureStandardizer.fit(ds.X_train)
    return (
        torch.tensor(scaler.transform(ds.X_train), dtype=torch.float32),
        torch.tensor(ds.y_train),
        torch.tensor(scaler.transform(ds.X_test), dtype=torch.float32),
        torch.tensor(ds.y_test),
    )


def fit(
    model: nn.Module, opt: torch.optim.Optimizer, x: Tensor, y: Tensor, epochs: int, seed: int
) -> None:
    gen = torch.Generator().manual_seed(seed)
    model.train()
    for _ in range(epochs):
        for batch in torch.randperm(len(y), generator=gen).split(256):
            loss = nn.functional.cross_entropy(model(x[batch]), y[batch])
            opt.zero_grad()
            loss.backward()
            opt.step()


def scores(logits: Tensor, y: Tensor, n_classes: int) -> tuple[float, float]:
    """Test accuracy and one-vs-rest macro AUC."""
    prob = torch.softmax(logits, dim=1).double().numpy()
    acc = float((prob.argmax(axis=1) == y.numpy()).mean())
    auc = float(roc_auc_score(y.numpy(), prob, multi_class="ovr", labels=list(range(n_classes))))
    return acc, auc


def supervised(name: str, epochs: int, seed: int) -> None:
    ds = load(name, seed=seed)
    x, y, x_test, y_test = tensors(ds)
    p, k = ds.n_features, ds.n_classes
    torch.manual_seed(seed)
    tel = nn.Sequential(nn.BatchNorm1d(p), TEL(p, k, n_trees=10, depth=4, gamma=1.0))
    start = time.perf_counter()
    fit(tel, torch.optim.Adam(tel.parameters(), lr=0.01), x, y, epochs, seed)
    tel_seconds = time.perf_counter() - start
    tel.eval()
    with torch.no_grad():
        tel_acc, tel_auc = scores(tel(x_test), y_test, k)
    # plain RMSprop (lr 0.01) at a constant rate, no clipping, batch 256 as for TEL
    dgt_config = TrainingConfig(
        height=6,
        epochs=epochs,
        batch_size=256,
        learning_rate=0.01,
        grad_clip_norm=0.0,
        restarts=None,
        seed=seed,
        progress=False,
    )
    start = time.perf_counter()
    dgt = DGTClassifier(dgt_config).fit(ds.X_train, ds.y_train)
    dgt_seconds = time.perf_counter() - start
    dgt_acc, dgt_auc = scores(torch.from_numpy(dgt.leaf_values(ds.X_test)), y_test, k)
    paper = PAPER_TABLE3_TEL_AUC.get(name, "-")
    print(
        f"{name:10s}  {tel_acc:7.3f}  {tel_auc:7.3f}  {paper:>12s}  {dgt_acc:7.3f}  "
        f"{dgt_auc:7.3f}  {tel_seconds:6.1f}  {dgt_seconds:6.1f}",
        flush=True,
    )


def bandit(kind: str, lr: float, n: int | None, options: dict[str, float]) -> None:
    ds = load("letter")
    config: dict[str, object] = {
        "kind": kind,
        "n_features": ds.n_features,
        "n_actions": ds.n_classes,
        "learning_rate": lr,
    }
    if options:
        config["options"] = options
    learner = build_learner(config)
    order = np.random.default_rng(0).permutation(len(ds.y_train))[:n]
    correct, leaves = 0.0, 0.0
    start = time.perf_counter()
    for i in order:
        d = learner.act(ds.X_train[i])
        loss = float(d.action != ds.y_train[i])
        learner.learn(d, Feedback(loss=loss))
        correct += 1.0 - loss
        leaves += d.extras.get("reachable_leaves", 1.0)
    seconds = time.perf_counter() - start
    print(
        f"{kind:4s}  {lr:8.0e}  {len(order):6d}  {correct / len(order):9.3f}  "
        f"{leaves / len(order):12.2f}  {1e3 * seconds / len(order):10.2f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--datasets", nargs="+", default=["satimage", "optdigits"])
    parser.add_argument("--epochs", type=int, default=30)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--bandit-lrs", type=float, nargs="+", default=[1e-3, 1e-2])
    parser.add_argument("--bandit-rounds", type=int, default=None, help="default: full pass")
    parser.add_argument("--gamma", type=float, default=1.0, help="TEL-Bandit smooth-step width")
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    print(f"supervised, {args.epochs} epochs, batch 256, seed {args.seed}")
    print("dataset     tel_acc  tel_auc  paper_tel_auc  dgt_acc  dgt_auc   tel_s   dgt_s")
    for name in args.datasets:
        supervised(name, args.epochs, args.seed)
    print("\nbandit, Letter, single pass, epsilon-greedy 0.3, eq. 8 estimator")
    print("kind        lr  rounds  prog_acc  leaves/tree  ms/round")
    for lr in args.bandit_lrs:
        for kind in ("tel", "dgt"):
            options = {"gamma": args.gamma} if kind == "tel" else {}
            bandit(kind, lr, args.bandit_rounds, options)


if __name__ == "__main__":
    main()
