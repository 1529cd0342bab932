"""Learning-rate schedules of the papers: constant, then multiplied by ``decay_factor`` at the
start of every epoch from ``decay_start`` on (Luong §4.1: halve every epoch after epoch 5;
Shu §5.1: halve from epoch 4); and when to stop early (:func:`plateaued`)."""

from __future__ import annotations

import torch

from collections.abc import Sequence

from nmtlib.config import TrainConfig


def learning_rate(cfg: TrainConfig, epoch: int) -> float:
    """Rate for 1-based ``epoch``."""
    halvings = max(0, epoch - cfg.decay_start + 1)
    return cfg.lr * cfg.decay_factor**halvings


def build_optimizer(cfg: TrainConfig, params) -> torch.optim.Optimizer:
    if cfg.optimizer == "adam":
        return torch.optim.Adam(params, lr=cfg.lr)
    return torch.optim.SGD(params, lr=cfg.lr)


def set_lr(optimizer: torch.optim.Optimizer, lr: float) -> None:
    for group in optimizer.param_groups:
        group["lr"] = lr


def plateaued(dev_ppls: Sequence[float], patience: int, min_improvement: float) -> bool:
    """Whether early stopping ends training after these dev perplexities (in evaluation order).

    An evaluation *improves* when it is below ``(1 − min_improvement)`` times the best of the
    evaluations before it (the first one always improves). Training stops once the last
    ``patience`` evaluations all failed to improve; ``patience`` 0 never stops. The papers train
    a fixed number of epochs: this is for small corpora, where a fixed count either stops
    mid-descent or over-trains (Joey NMT's and OpenNMT-py's ``early_stopping`` work alike).
    """
    if patience <= 0 or len(dev_ppls) <= patience:
        return False
    best = min(dev_ppls[:-patience])
    for ppl in dev_ppls[-patience:]:
        if ppl < best * (1 - min_improvement):
            return False
        best = min(best, ppl)
    return True
