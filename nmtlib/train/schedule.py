"""Learning-rate schedules of the papers: constant, then multiplied by ``decay_factor`` at the
start of every epoch from ``decay_start`` on (Luong §4.1: halve every epoch after epoch 5;
Shu §5.1: halve from epoch 4)."""

from __future__ import annotations

import torch

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
