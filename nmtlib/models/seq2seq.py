"""The encoder–decoder: encoding, teacher-forced scoring and the step function for search."""

from __future__ import annotations

from dataclasses import dataclass

import torch
from torch import Tensor, nn

from nmtlib.models.attention import Memory, length_mask
from nmtlib.models.decoders import DecoderState, RecurrentDecoder
from nmtlib.models.encoders import RecurrentEncoder


@dataclass
class ForcedOutput:
    """Teacher-forced pass over a batch of reference prefixes."""

    logits: Tensor  #: (B, T, V), or (N, V) at the positions asked for
    attention: Tensor | None  #: (B, T, S) a_t of every step, None without attention
    evaluated: Tensor | None  #: (B, T) score evaluations per step
    gates: Tensor | None  #: (B, T) Flexible Attention g(t)


class Seq2Seq(nn.Module):
    def __init__(self, encoder: RecurrentEncoder, decoder: RecurrentDecoder) -> None:
        super().__init__()
        self.encoder = encoder
        self.decoder = decoder

    @property
    def has_attention(self) -> bool:
        return self.decoder.attention is not None

    def graph_key(self, t: int, tau: float | None = None) -> tuple | None:
        """What a CUDA graph of :meth:`step` at step ``t`` must be specific to (the attention's
        :meth:`~nmtlib.models.attention.Attention.graph_key`); None if it cannot be recorded."""
        att = self.decoder.attention
        return () if att is None else att.graph_key(t, tau)

    def encode(self, src: Tensor, src_lengths: Tensor, tau: float | None = None) -> tuple[Memory, DecoderState]:
        """The memory every step reads and the initial decoder state; ``tau`` is the search's
        threshold of Flexible Attention (None = ∞; other mechanisms have no penalty to bound)."""
        enc = self.encoder(src, src_lengths)
        # batches keep lengths on the host (packing needs them there); a copy without a host sync
        lengths = src_lengths.to(src.device, non_blocking=True)
        memory = Memory(enc.states, length_mask(lengths, src.shape[1]), lengths, tau=tau)
        memory = self.decoder.prepare_memory(memory)
        return memory, self.decoder.init_state(enc, memory)

    def step(self, y_prev: Tensor, state: DecoderState, memory: Memory):
        """Log-probabilities (B, V) of y_t given y_{t−1}, the new state and the attention output."""
        features, state, att = self.decoder.step(y_prev, state, memory)
        return torch.log_softmax(self.decoder.generator(features).float(), dim=-1), state, att

    def forward(
        self, src: Tensor, src_lengths: Tensor, tgt_in: Tensor, keep_attention: bool = False,
        positions: Tensor | None = None,
    ) -> ForcedOutput:
        """Teacher forcing: ``tgt_in`` (B, T) starts with ``<bos>``; logits predict ``tgt_out``.

        ``positions`` (B, T) bool: compute logits only there, as an (N, V) matrix in row-major
        order — the loss needs no vocabulary projection of padding."""
        memory, state = self.encode(src, src_lengths)
        features, weights, evaluated, gates = self.decoder.unroll(
            memory, state, *self.decoder.embed_all(tgt_in), keep_attention=keep_attention)
        # the vocabulary projection is the largest matmul: one call over all steps
        logits = self.decoder.generator(features if positions is None else features[positions])
        return ForcedOutput(logits, weights, evaluated, gates)
