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

from nmtlib import precision
from nmtlib.data.batching import Batch
from nmtlib.data.vocab import PAD_ID
from nmtlib.models.seq2seq import Seq2Seq
from nmtlib.precision import require_bf16


def loss_terms(logits: Tensor, tgt_out: Tensor, gates: Tensor | None, beta: float) -> tuple[Tensor, Tensor]:
    """(objective, summed NLL) from ``logits`` over the whole (B, T) grid, or (N, V) at the real
    (non-pad) positions of ``tgt_out`` in row-major order; ``gates`` (B, T): Flexible Attention's
    g(t), used when ``beta`` > 0: Σ −log p(y|x) − β·(1/T)Σ_t g(t) (Shu & Nakayama Eq. 9)."""
    real = tgt_out != PAD_ID
    if logits.dim() == 2 and logits.dtype != torch.float32 and logits.device.type == "cpu":
        nll = LowPrecisionNLL.apply(logits, tgt_out[real])
    elif logits.dim() == 2:
        nll = nn.functional.cross_entropy(logits.float(), tgt_out[real], reduction="sum")
    else:
        nll = nn.functional.cross_entropy(logits.float().reshape(-1, logits.shape[-1]), tgt_out.reshape(-1),
                                          ignore_index=PAD_ID, reduction="sum")
    if not beta or gates is None:
        return nll, nll
    w = real.to(gates.dtype)
    return nll - beta * ((gates * w).sum(1) / w.sum(1)).sum(), nll


class LowPrecisionNLL(torch.autograd.Function):
    """Σ −log softmax(logits)[target] of bf16 (N, V) logits on a CPU, in float32, a block of rows
    at a time, so that no (N, V) float32 tensor is made.

    ``cross_entropy(logits.float(), …)`` computes the same in float32 (the logits are bf16 either
    way), but through four (N, V) float32 tensors of 30–90 MB each (the cast, log-softmax, its
    gradient and NLL's zero-filled gradient), each larger than glibc's largest heap block and so
    faulted in afresh at every step: on one thread they took 200 ms of a 600 ms bf16 step of the
    2×256 model, this 85 (benchmarks/RESULTS.md, C8). Blocks of :attr:`block_elements` float32
    values stay in the L2 cache. The gradient, softmax − one-hot, is computed in float32 and
    rounded to bf16 as the cast's gradient would be; it differs from cross_entropy's by at most
    one bf16 rounding step (tests/test_precision.py)."""

    #: float32 elements per block of rows: 1 MB, the L2 cache of one core of the EPYC it was tuned on
    block_elements = 1 << 18

    @staticmethod
    def forward(ctx, logits: Tensor, target: Tensor) -> Tensor:
        n, vocab = logits.shape
        rows = max(1, LowPrecisionNLL.block_elements // vocab)
        lse = torch.empty(n, dtype=torch.float32, device=logits.device)
        for i in range(0, n, rows):
            lse[i:i + rows] = torch.logsumexp(logits[i:i + rows].float(), 1)
        ctx.save_for_backward(logits, target, lse)
        return (lse - logits.gather(1, target.unsqueeze(1)).squeeze(1).float()).sum()

    @staticmethod
    def backward(ctx, grad: Tensor) -> tuple[Tensor, None]:
        logits, target, lse = ctx.saved_tensors
        n, vocab = logits.shape
        rows = max(1, LowPrecisionNLL.block_elements // vocab)
        out = torch.empty_like(logits)
        minus_one = torch.full((min(rows, n), 1), -1.0)
        for i in range(0, n, rows):
            block = logits[i:i + rows].float().sub_(lse[i:i + rows, None]).exp_()  # softmax
            block.scatter_add_(1, target[i:i + rows, None], minus_one[:block.shape[0]])
            out[i:i + rows] = block.mul_(grad)
        return out, None


def batch_loss(model: Seq2Seq, batch: Batch, beta: float = 0.0) -> tuple[Tensor, Tensor]:
    """(objective to minimise, summed NLL) of a batch, both summed over sentences."""
    # on CPU, project only the real positions onto the vocabulary (no padding arithmetic); on a
    # GPU the selection's host sync costs more than it saves (benchmarks/RESULTS.md, G1)
    positions = batch.tgt_out != PAD_ID if batch.tgt_out.device.type == "cpu" else None
    out = model(batch.src, batch.src_lengths, batch.tgt_in, positions=positions)
    return loss_terms(out.logits, batch.tgt_out, out.gates, beta)


def autocast_factory(bf16: bool, device: torch.device, cuda_graphs: bool = False) -> Callable[[], contextlib.AbstractContextManager]:
    """What ``train.bf16`` means: a fresh bf16 autocast context per call on ``device`` (CUDA, or a
    CPU with native bf16: :func:`nmtlib.precision.require_bf16`), else none. CUDA graphs cannot
    capture autocast's weight cache, so it is off with ``cuda_graphs``."""
    if bf16:
        require_bf16(device, "train.bf16")
    return precision.autocast(bf16, device, cache=not cuda_graphs)
