"""Figures of the papers, drawn with matplotlib (Agg backend: no display needed)."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402


def _save(fig: plt.Figure, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def _empty(path: Path, title: str, why: str) -> None:
    fig, ax = plt.subplots(figsize=(6, 3))
    ax.set_title(title)
    ax.text(0.5, 0.5, why, ha="center", va="center", wrap=True)
    ax.set_axis_off()
    _save(fig, path)


def learning_curves(curves: pd.DataFrame, path: Path, title: str = "Learning curves (Luong et al. 2015, Fig. 5)") -> None:
    """Dev perplexity against training updates, one line per variant and seed."""
    if curves.empty:
        return _empty(path, title, "no training logs yet")
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for (variant, run), df in curves.groupby(["variant", "run"], sort=False):
        label = variant if curves["run"].nunique() == 1 else f"{variant} ({run})"
        ax.plot(df["step"], df["dev_ppl"], marker="o", markersize=3, label=label)
    ax.set_yscale("log")
    ax.set_xlabel("training updates (mini-batches)")
    ax.set_ylabel("dev perplexity (log scale)")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend(fontsize=8)
    _save(fig, path)


def bleu_by_length(buckets: pd.DataFrame, path: Path, title: str = "BLEU by source length (Luong et al. 2015, Fig. 6)") -> None:
    if buckets.empty:
        return _empty(path, title, "no translations scored yet")
    mean = buckets.groupby(["variant", "bucket"], sort=False)["bleu"].mean().reset_index()
    order = list(dict.fromkeys(buckets["bucket"]))
    fig, ax = plt.subplots(figsize=(7, 4.5))
    for variant, df in mean.groupby("variant", sort=False):
        df = df.set_index("bucket").reindex(order)
        ax.plot(range(len(order)), df["bleu"], marker="o", label=variant)
    ax.set_xticks(range(len(order)), order)
    ax.set_xlabel("source sentence length (words)")
    ax.set_ylabel("tokenized BLEU")
    ax.set_title(title)
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    _save(fig, path)


def attention_heatmaps(
    matrices: dict[str, list[np.ndarray]], src: list[list[str]], tgt: list[list[str]], sentences: list[int],
    path: Path, title: str = "Attention of forced decoding (rows: target words, columns: source words)",
) -> None:
    """One panel per (variant, sentence): a_t of each target word over the source words."""
    if not matrices:
        return _empty(path, title, "no attentional variant in this experiment")
    names = list(matrices)
    rows, cols = len(names), len(sentences)
    fig, axes = plt.subplots(rows, cols, figsize=(4.2 * cols, 3.8 * rows), squeeze=False)
    for r, name in enumerate(names):
        for c, sid in enumerate(sentences):
            ax = axes[r][c]
            m = matrices[name][sid]
            ax.imshow(m, cmap="Greys", vmin=0, vmax=1, aspect="auto")
            ax.set_xticks(range(len(src[sid])), src[sid], rotation=90, fontsize=6)
            ax.set_yticks(range(len(tgt[sid])), tgt[sid], fontsize=6)
            ax.set_title(f"{name} — sentence {sid}", fontsize=9)
            if c == 0:
                ax.set_ylabel("target word")
            if r == rows - 1:
                ax.set_xlabel("source word")
    fig.suptitle(title)
    _save(fig, path)
