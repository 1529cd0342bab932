"""Forced decoding of references: attention matrices for AER and heatmaps.

The exported matrix of a sentence has one row per decoder step: row t (0-based) holds a_{t+1},
computed by the step that consumed y_t (y_0 = ``<bos>``) and predicted y_{t+1} (the last row
predicted ``<eos>``). Which target word a row *belongs to* is a convention,
:func:`alignment_rows`:

- ``footnote14`` — Luong et al. 2015, footnote 14, the paper's AER protocol: for content-based
  scores (dot, general, concat, additive) a_t aligns the *input* word y_{t−1}, for ``location``
  the *predicted* word y_t;
- ``predicted`` — a_t aligns the word it helps predict, y_t, for every score.

Both are scored. On the embedded demo's attentional models AER is 0.88–0.90 with
``footnote14`` and 0.15–0.17 with ``predicted`` (docs/metrics.md has the table and its command):
our content-based models attend to the source of the word they are predicting.
"""

from __future__ import annotations

import numpy as np
import torch

from nmtlib.data.batching import ParallelData, collate, sequential_batches
from nmtlib.models.seq2seq import Seq2Seq


CONVENTIONS = ("footnote14", "predicted")


def alignment_rows(
    step_weights: np.ndarray, target_length: int, content_based: bool, convention: str = "footnote14"
) -> np.ndarray:
    """(T, S) weights of target words 1..T from the (T+1, S) weights of decoder steps 1..T+1.

    Step t (1-based) consumes y_{t−1} (y_0 = <bos>) and predicts y_t (y_{T+1} = <eos>).
    """
    if convention not in CONVENTIONS:
        raise ValueError(f"unknown alignment convention {convention!r}; choose one of {CONVENTIONS}")
    if convention == "footnote14" and content_based:
        return step_weights[1 : target_length + 1]  # step j+1 consumed y_j
    return step_weights[:target_length]  # step j predicted y_j


@torch.no_grad()
def forced_attention(
    model: Seq2Seq, data: ParallelData, batch_size: int, device: torch.device
) -> list[np.ndarray]:
    """Per sentence, the (T+1, S) attention of every decoder step (see module docstring)."""
    if not model.has_attention:
        raise ValueError("forced attention export needs a model with attention")
    model.eval()
    out: list[np.ndarray] = [None] * len(data)  # type: ignore[list-item]
    for idx in sequential_batches(len(data), batch_size):
        batch = collate(data, idx).to(device)
        result = model(batch.src, batch.src_lengths, batch.tgt_in, keep_attention=True)
        weights = result.attention.float().cpu().numpy()
        for row, i in enumerate(idx):
            S, T = len(data.src[i]) or 1, len(data.tgt[i])
            out[i] = weights[row, : T + 1, :S]
    return out

