"""Forced decoding of references: attention matrices for AER and heatmaps.

Luong et al. 2015 footnote 14: the step that consumes y_{t−1} and predicts y_t computes a_t;
for content-based scores (dot, general, concat, additive) a_t aligns the *input* word y_{t−1},
for ``location`` it aligns the *predicted* word y_t. :func:`alignment_rows` applies that rule,
so row j of an exported matrix always holds the weights that belong to target word j.
"""

from __future__ import annotations

import numpy as np
import torch

from nmtlib.data.batching import ParallelData, collate, sequential_batches
from nmtlib.models.seq2seq import Seq2Seq


def alignment_rows(step_weights: np.ndarray, target_length: int, content_based: bool) -> np.ndarray:
    """(T, S) weights of target words 1..T from the (T+1, S) weights of decoder steps 1..T+1.

    Step t (1-based) consumes y_{t−1} (y_0 = <bos>) and predicts y_t (y_{T+1} = <eos>).
    """
    if content_based:
        return step_weights[1 : target_length + 1]  # step j+1 consumed y_j
    return step_weights[:target_length]  # step j predicted y_j


@torch.no_grad()
def forced_attention(
    model: Seq2Seq, data: ParallelData, batch_size: int, device: torch.device
) -> list[np.ndarray]:
    """Per sentence, the (T, S) attention matrix aligned to target words (see module docstring)."""
    if not model.has_attention:
        raise ValueError("forced attention export needs a model with attention")
    content_based = model.decoder.attention.score.content_based
    model.eval()
    out: list[np.ndarray] = [None] * len(data)  # type: ignore[list-item]
    for idx in sequential_batches(len(data), batch_size):
        batch = collate(data, idx).to(device)
        result = model(batch.src, batch.src_lengths, batch.tgt_in, keep_attention=True)
        weights = result.attention.float().cpu().numpy()
        for row, i in enumerate(idx):
            S, T = len(data.src[i]) or 1, len(data.tgt[i])
            out[i] = alignment_rows(weights[row, : T + 1, :S], T, content_based)
    return out

