"""The training objective: summed negative log-likelihood of the reference, and Shu & Nakayama's
fine-tuning objective (Eq. 9) when β > 0.

One definition for the eager path (:func:`batch_loss`) and the CUDA-graph path
(:class:`nmtlib.train.graphs.CudaGraphLoss`), which differ only in how they get the logits.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

import torch
from torch import Tensor, nn

from nmtlib.data.batching import Batch
from nmtlib.data.vocab import PAD_ID
from nmtlib.models.seq2seq import Seq2Seq


def loss_terms(logits: Tensor, tgt_out: Tensor, gates: Tensor | None, beta: float) -> tuple[Tensor, Tensor]:
    """(objective, summed NLL) from ``logits`` over the whole (B, T) grid, or (N, V) at the real
    (non-pad) positions of ``tgt_out`` in row-major order; ``gates`` (B, T): Flexible Attention's
    g(t), used when ``beta`` > 0: Σ −log p(y|x) − β·(1/T)Σ_t g(t) (Shu & Nakayama Eq. 9)."""
    real = tgt_out != PAD_ID
    if logits.dim() == 2:
        nll = nn.functional.cross_entropy(logits.float(), tgt_out[real], reduction="sum")
    else:
        nll = nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), tgt_out.reshape(-1),
                                          ignore_index=PAD_ID, reduction="sum")
    if not beta or gates is None:
        return nll, nll
    w = real.to(gates.dtype)
    return nll - beta * ((gates * w).sum(1) / w.sum(1)).sum(), nll


def batch_loss(model: Seq2Seq, batch: Batch, beta: float = 0.0) -> tuple[Tensor, Tensor]:
    """(objective to minimise, summed NLL) of a batch, both summed over sentences."""
    # on CPU, project only the real positions onto the vocabulary (no padding arithmetic); on a
    # GPU the selection's host sync costs more than it saves (benchmarks/RESULTS.md, G1)
    positions = batch.tgt_out != PAD_ID if batch.tgt_out.device.type == "cpu" else None
    out = model(batch.src, batch.src_lengths, batch.tgt_in, positions=positions)
    return loss_terms(out.logits, batch.tgt_out, out.gates, beta)


def autocast_factory(bf16: bool, device: torch.device, cuda_graphs: bool = False) -> Callable[[], contextlib.AbstractContextManager]:
    """What ``train.bf16`` means: a fresh bf16 autocast context per call on CUDA, else none.
    CUDA graphs cannot capture autocast's weight cache, so it is off with ``cuda_graphs``."""
    if bf16 and device.type == "cuda":
        return lambda: torch.autocast("cuda", dtype=torch.bfloat16, cache_enabled=not cuda_graphs)
    return contextlib.nullcontext
