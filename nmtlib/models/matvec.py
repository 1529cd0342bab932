"""Batched matrix–vector products of attention, with backward passes that suit the CPU.

Attention does two of them per decoder step: the scores q·k_s of a query against its keys
(``dot``/``general``, Luong Eq. 8) and the context Σ_s a(s) h̄_s (Eq. 4 of Bahdanau et al., the
weighted sum of Luong §3). As ``torch.bmm`` with a vector operand, their backward passes are
batched outer products and (H, S)×(S, 1) products, which ATen's CPU kernels run at 1–2 GFLOP/s:
at 2×256, batch 64, one score's forward and backward took 5.3 ms against 0.9 ms here
(benchmarks/RESULTS.md, hotspot G). Each product is written as a (1, ·) row times a matrix, the
layout the CPU GEMM handles well, and each outer product as a broadcast multiply.

CUDA keeps ``torch.bmm``: cuBLAS has no such weakness, and the CUDA-graph path was measured
with it. Under CPU autocast (``train.bf16``) the backward passes run in the forward's autocast
state, so their products take the same precision as the forward's.
"""

from __future__ import annotations

import torch
from torch import Tensor


class _Scores(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cpu")
    def forward(ctx, keys: Tensor, query: Tensor) -> Tensor:
        ctx.save_for_backward(keys, query)
        return torch.bmm(query.unsqueeze(1), keys.transpose(1, 2)).squeeze(1)

    @staticmethod
    @torch.amp.custom_bwd(device_type="cpu")
    def backward(ctx, grad: Tensor):
        keys, query = ctx.saved_tensors
        g_keys = grad.unsqueeze(2) * query.unsqueeze(1) if ctx.needs_input_grad[0] else None
        g_query = torch.bmm(grad.unsqueeze(1), keys).squeeze(1) if ctx.needs_input_grad[1] else None
        return g_keys, g_query


class _WeightedSum(torch.autograd.Function):
    @staticmethod
    @torch.amp.custom_fwd(device_type="cpu")
    def forward(ctx, weights: Tensor, values: Tensor) -> Tensor:
        ctx.save_for_backward(weights, values)
        return torch.bmm(weights.unsqueeze(1), values).squeeze(1)

    @staticmethod
    @torch.amp.custom_bwd(device_type="cpu")
    def backward(ctx, grad: Tensor):
        weights, values = ctx.saved_tensors
        g_weights = torch.bmm(grad.unsqueeze(1), values.transpose(1, 2)).squeeze(1) if ctx.needs_input_grad[0] else None
        g_values = weights.unsqueeze(2) * grad.unsqueeze(1) if ctx.needs_input_grad[1] else None
        return g_weights, g_values


def dot_scores(keys: Tensor, query: Tensor) -> Tensor:
    """``(B, S)`` scores k_s·q of ``query`` ``(B, K)`` against ``keys`` ``(B, S, K)``."""
    if keys.is_cuda:
        return torch.bmm(keys, query.unsqueeze(2)).squeeze(2)
    return _Scores.apply(keys, query)


def weighted_sum(weights: Tensor, values: Tensor) -> Tensor:
    """``(B, H)`` sums Σ_s w_s v_s of ``values`` ``(B, S, H)`` with ``weights`` ``(B, S)``."""
    if values.is_cuda:
        return torch.bmm(weights.unsqueeze(1), values).squeeze(1)
    return _WeightedSum.apply(weights, values)
