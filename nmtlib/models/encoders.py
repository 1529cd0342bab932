"""Recurrent encoders: Luong's stacked LSTM (optionally reading the source reversed) and the
bidirectional GRU / LSTM of Bahdanau et al. 2015 (Eq. 9) and Shu & Nakayama 2017.

Padded batches are packed, so a sentence's states do not depend on what it is batched with.
Training on CPU runs the same packed recurrence as per-step cells (:func:`~nmtlib.models.cells.
packed_layer`), whose backward is cheaper there than ATen's packed loop.
States are always returned in the original source order — with ``reverse=True`` only the
reading order changes — so attention positions, AER links and unk replacement index the
source as written.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn
from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

from nmtlib.models.cells import layer_weights, packed_layer

RNNS: dict[str, type[nn.RNNBase]] = {"lstm": nn.LSTM, "gru": nn.GRU}


@dataclass
class EncoderOutput:
    states: Tensor  #: (B, S, H_m) h̄_s, original order
    final_h: Tensor  #: (L, B, H) last hidden state of each layer (forward direction for bi-RNNs)
    final_c: Tensor | None  #: (L, B, H) LSTM cells, None for GRU
    backward_first: Tensor | None  #: (B, H) ←h_1 of the top layer of a bidirectional encoder


def reverse_padded(x: Tensor, lengths: Tensor) -> Tensor:
    """Reverse each row's first ``lengths[b]`` entries along dim 1, padding stays in place."""
    S = x.shape[1]
    idx = torch.arange(S, device=x.device).unsqueeze(0).expand(x.shape[0], S)
    rev = lengths.unsqueeze(1) - 1 - idx
    idx = torch.where(rev >= 0, rev, idx)
    if x.dim() == 3:
        idx = idx.unsqueeze(2).expand_as(x)
    return x.gather(1, idx)


class RecurrentEncoder(nn.Module):
    """Embedding + (bi)directional multi-layer RNN.

    :param rnn: ``lstm`` or ``gru``
    :param bidirectional: annotations [→h_j; ←h_j] of size 2·hidden (Bahdanau Eq. 9)
    :param reverse: read the source backwards (Luong "Base + reverse")
    :param dropout: between layers (Zaremba et al.), and on the embeddings
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int,
        hidden_size: int,
        layers: int = 1,
        rnn: str = "lstm",
        bidirectional: bool = False,
        reverse: bool = False,
        dropout: float = 0.0,
        padding_idx: int = 0,
    ) -> None:
        super().__init__()
        self.embedding = nn.Embedding(vocab_size, embedding_size, padding_idx=padding_idx)
        self.rnn = RNNS[rnn](
            embedding_size,
            hidden_size,
            num_layers=layers,
            batch_first=True,
            bidirectional=bidirectional,
            dropout=dropout if layers > 1 else 0.0,
        )
        self.dropout = nn.Dropout(dropout)
        self.bidirectional = bidirectional
        self.reverse = reverse
        self.layers = layers
        self.hidden_size = hidden_size
        self.output_size = hidden_size * (2 if bidirectional else 1)

    def forward(self, src: Tensor, lengths: Tensor) -> EncoderOutput:
        """``src`` (B, S) token ids, ``lengths`` (B,) on any device."""
        if self.reverse:
            src = reverse_padded(src, lengths.to(src.device, non_blocking=True))
        emb = self.dropout(self.embedding(src))
        if torch.is_grad_enabled() and emb.device.type == "cpu":
            states, h, c = self._cells(emb, lengths.cpu())
        else:
            states, h, c = self._packed(emb, lengths.cpu())
        if self.reverse:
            states = reverse_padded(states, lengths.to(src.device, non_blocking=True))
        backward_first = None
        if self.bidirectional:
            # (L*2, B, H): directions interleaved per layer; keep the forward finals and ←h_1
            backward_first = h[-1]
            h = h[0::2]
            c = None if c is None else c[0::2]
        return EncoderOutput(states, h, c, backward_first)

    def _packed(self, emb: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor, Tensor | None]:
        """``self.rnn`` (cuDNN on a GPU) over the packed batch: (B, S, H_m) states, zero at padding,
        and (L·D, B, H) final h and c, rows in the batch's order.

        What ``pack_padded_sequence(enforce_sorted=False)`` and ``pad_packed_sequence`` do, with the
        same permutation, but without their two host syncs (the sort order copied to the device
        blocking, the lengths read back): both permutations are made on the host from the host
        lengths and sent without waiting, so a training step can be queued while the last one runs.
        """
        lengths, order = torch.sort(lengths, descending=True)  # the call pack_padded_sequence makes
        inverse = torch.argsort(order)
        order_d = order.to(emb.device, non_blocking=True)
        inverse_d = inverse.to(emb.device, non_blocking=True)
        packed = pack_padded_sequence(emb.index_select(0, order_d), lengths, batch_first=True)
        out, hidden = self.rnn(packed)
        states, _ = pad_packed_sequence(out, batch_first=True, total_length=emb.shape[1])
        h, c = hidden if isinstance(hidden, tuple) else (hidden, None)
        unsort = lambda x: None if x is None else x.index_select(1, inverse_d)  # noqa: E731
        return states.index_select(0, inverse_d), unsort(h), unsort(c)

    def _cells(self, emb: Tensor, lengths: Tensor) -> tuple[Tensor, Tensor, Tensor | None]:
        """What ``self.rnn`` computes over the packed batch — (B, S, H_m) states, zero at padding,
        and (L·D, B, H) final h and c in the module's layout — as :func:`packed_layer` cells."""
        B, S, _ = emb.shape
        order = torch.argsort(lengths, descending=True, stable=True)
        longest = int(lengths[order[0]])
        sorted_lengths = lengths[order].tolist()
        sizes, n = [], B
        for t in range(longest):  # rows longer than t
            while sorted_lengths[n - 1] <= t:
                n -= 1
            sizes.append(n)
        is_lstm = isinstance(self.rnn, nn.LSTM)
        x = emb.index_select(0, order.to(emb.device)).transpose(0, 1)[:longest]  # (S', B, E)
        hs: list[Tensor] = []
        cs: list[Tensor] = []
        for k in range(self.layers):
            if k and self.rnn.dropout:
                x = F.dropout(x, self.rnn.dropout, self.training)
            outs = []
            for reverse in (False, True) if self.bidirectional else (False,):
                w = layer_weights(self.rnn, k, reverse)
                out, h, c = packed_layer(F.linear(x, w.w_ih, w.bias_x), sizes, w, is_lstm, reverse)
                outs.append(out)
                hs.append(h)
                if c is not None:
                    cs.append(c)
            x = torch.cat(outs, 2) if len(outs) > 1 else outs[0]
        inverse = torch.argsort(order).to(emb.device)
        states = F.pad(x.transpose(0, 1).index_select(0, inverse), (0, 0, 0, S - longest))
        unsort = lambda xs: torch.stack(xs).index_select(1, inverse)  # noqa: E731
        return states, unsort(hs), (unsort(cs) if cs else None)
