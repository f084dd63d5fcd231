"""``loss.png`` of ``banditree train``: training loss per epoch of every grid run and the retrain."""

from __future__ import annotations

from pathlib import Path

from banditree.supervised.grid import describe
from banditree.supervised.protocol import ProtocolResult


def plot_losses(result: ProtocolResult, path: Path) -> Path:
    """Write the training-loss curves (grid runs thin, the chosen retrain bold) to ``path``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    report = result.report
    figure = "accuracy" if report["task"] == "classification" else "rmse"
    fig, ax = plt.subplots(figsize=(7.0, 4.4), dpi=100)
    for run in result.runs:
        label = f"{describe(run.settings)}: validation {figure} {run.validation_score:.4f}"
        epochs = range(1, len(run.loss_history) + 1)
        ax.plot(epochs, run.loss_history, linewidth=0.8, alpha=0.7, label=label)
    epochs = range(1, len(result.final_loss_history) + 1)
    ax.plot(
        epochs,
        result.final_loss_history,
        color="black",
        linewidth=2.0,
        label=f"retrained on train + validation: test {figure} {report[f'test_{figure}']:.4f}",
    )
    ax.set_yscale("log")
    ax.set_xlabel("epoch")
    ax.set_ylabel(
        "training loss (cross-entropy)" if figure == "accuracy" else "training MSE (scaled)"
    )
    ax.set_title(
        f"{report['dataset']}: DGT height {report['height']}, {len(result.runs)} grid runs"
    )
    ax.legend(fontsize=6, loc="upper right")
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return path
