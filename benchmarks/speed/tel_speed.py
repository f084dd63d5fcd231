"""Training time per epoch: conditional TEL vs a dense logistic soft-tree ensemble.

The paper's figure 3 setting (seed 003, section 4.1): 10 trees, batch 256, smooth-step
with gamma = 1 (the slowest value of its tuning range), learning rate 0.1, against
dense soft trees with the logistic activation ``1 / (1 + exp(-6 t))`` (figure 1's
scale).  Both models sit behind a batch-norm, train with Adam and cross-entropy on
the same mini-batches in the same run, single-threaded, epochs interleaved (TEL,
dense, TEL, ...); the paper reports over 10x at depth 10.  The mean epoch time includes the first epoch, where TEL starts with
every leaf reachable (weights ``U(-0.01, 0.01)``).

Run from the repository root::

    python -m benchmarks.speed.tel_speed --dataset letter --epochs 10
"""

from __future__ import annotations

import argparse
import time

import torch
from torch import Tensor, nn

from banditree.datasets import load
from banditree.models.tel.dense import dense_tree_ensemble
from banditree.models.tel.layer import INIT_BOUND, TEL
from banditree.models.tel.smooth_step import logistic

LOGISTIC_ALPHA = 1.0 / 6.0


class DenseLogisticEnsemble(nn.Module):
    """Soft trees evaluated at every node with the logistic activation (no conditional computation).

    Shape:
        input ``(B, p)``, output ``(B, k)``.
    """

    def __init__(self, in_features: int, out_features: int, n_trees: int, depth: int) -> None:
        super().__init__()
        self.node_weights = nn.Parameter(torch.empty(n_trees, (1 << depth) - 1, in_features))
        self.leaf_weights = nn.Parameter(torch.empty(n_trees, 1 << depth, out_features))
        self.reset_parameters()

    def reset_parameters(self) -> None:
        nn.init.uniform_(self.node_weights, -INIT_BOUND, INIT_BOUND)
        nn.init.uniform_(self.leaf_weights, -INIT_BOUND, INIT_BOUND)

    def forward(self, x: Tensor) -> Tensor:
        def activation(z: Tensor) -> Tensor:
            return logistic(z, LOGISTIC_ALPHA)

        return dense_tree_ensemble(x, self.node_weights, self.leaf_weights, activation).sum(dim=1)


class EpochTrainer:
    """Adam + cross-entropy over fixed mini-batches, one timed epoch per call."""

    def __init__(self, model: nn.Module, lr: float, tel: TEL | None = None) -> None:
        self.model = model
        self.opt = torch.optim.Adam(model.parameters(), lr=lr)
        self.tel = tel
        self.seconds: list[float] = []
        #: reachable leaves per tree of every batch (TEL only)
        self.leaves: list[float] = []

    def epoch(self, batches: list[Tensor], x: Tensor, y: Tensor) -> None:
        self.model.train()
        start = time.perf_counter()
        for batch in batches:
            loss = nn.functional.cross_entropy(self.model(x[batch]), y[batch])
            self.opt.zero_grad()
            loss.backward()
            self.opt.step()
            if self.tel is not None:
                self.leaves.append(self.tel.mean_reachable_leaves)
        self.seconds.append(time.perf_counter() - start)


def held_out_accuracy(model: nn.Module, x: Tensor, y: Tensor) -> float:
    model.eval()
    with torch.no_grad():
        return float((model(x).argmax(dim=1) == y).float().mean())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dataset", default="letter")
    parser.add_argument("--depths", type=int, nargs="+", default=list(range(2, 11)))
    parser.add_argument("--epochs", type=int, default=10)
    parser.add_argument("--trees", type=int, default=10)
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--gamma", type=float, default=1.0)
    parser.add_argument("--lr", type=float, default=0.1)
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)

    ds = load(args.dataset)
    x = torch.tensor(ds.X_train, dtype=torch.float32)
    y = torch.tensor(ds.y_train)
    x_test = torch.tensor(ds.X_test, dtype=torch.float32)
    y_test = torch.tensor(ds.y_test)
    p, k = ds.n_features, ds.n_classes
    order = torch.randperm(len(y), generator=torch.Generator().manual_seed(0))
    batches = list(order.split(args.batch))
    print(
        f"{args.dataset}: {len(y)} train examples, p={p}, k={k}; {args.trees} trees, "
        f"batch {args.batch}, {args.epochs} epochs, gamma={args.gamma}, "
        f"{args.threads} thread(s)"
    )
    print(
        "depth  dense_s/epoch  tel_s/epoch  ratio  tel_first_s  tel_last_s  last_ratio  "
        "leaves/tree_end  acc_dense  acc_tel"
    )
    for depth in args.depths:
        torch.manual_seed(depth)
        tel = TEL(p, k, n_trees=args.trees, depth=depth, gamma=args.gamma)
        tel_model = nn.Sequential(nn.BatchNorm1d(p), tel)
        dense_model = nn.Sequential(
            nn.BatchNorm1d(p), DenseLogisticEnsemble(p, k, args.trees, depth)
        )
        tel_run = EpochTrainer(tel_model, args.lr, tel)
        dense_run = EpochTrainer(dense_model, args.lr)
        for _ in range(args.epochs):  # interleaved, so both see the same machine load
            tel_run.epoch(batches, x, y)
            dense_run.epoch(batches, x, y)
        tel_times, dense_times, leaves = tel_run.seconds, dense_run.seconds, tel_run.leaves
        dense_mean = sum(dense_times) / len(dense_times)
        tel_mean = sum(tel_times) / len(tel_times)
        last_epoch = leaves[-len(batches) :]
        print(
            f"{depth:5d}  {dense_mean:13.3f}  {tel_mean:11.3f}  {dense_mean / tel_mean:5.1f}  "
            f"{tel_times[0]:11.3f}  {tel_times[-1]:10.3f}  {dense_times[-1] / tel_times[-1]:10.1f}  "
            f"{sum(last_epoch) / len(last_epoch):15.2f}  "
            f"{held_out_accuracy(dense_model, x_test, y_test):9.3f}  "
            f"{held_out_accuracy(tel_model, x_test, y_test):7.3f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
