"""One recurrent decoder for all three papers, composed from parts.

The papers differ in three independent choices, each a constructor argument here:

- **which state queries the attention** (``query``): ``current`` — Luong et al. 2015 compute
  h_t first and attend with it; ``previous`` — Bahdanau et al. 2015 (Eq. 7) and Shu & Nakayama
  2017 (Eq. 3) attend with s_{t−1} and feed c_t into the RNN with the embedding;
- **input feeding** (``input_feed``, Luong §3.3): h̃_{t−1} is concatenated to the embedding;
- **the output layer** (``output``): Luong's attentional layer h̃_t = tanh(W_c[c_t; h_t])
  (Eq. 5) then softmax(W_s h̃_t) (Eq. 6); Bahdanau's deep output with maxout; Shu's fully
  connected layer before the softmax.

:meth:`RecurrentDecoder.step` is the single step function used by teacher-forced training,
forced decoding and beam search alike. The RNN runs as per-layer cells over the ``nn.LSTM`` /
``nn.GRU`` module's weights (:mod:`nmtlib.models.cells`); teacher forcing embeds and projects all
target words before the time loop (:meth:`RecurrentDecoder.embed_all`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import Tensor, nn

from nmtlib.models.attention import Attention, AttentionOutput, Memory
from nmtlib.models.cells import LayerWeights, StackedCells
from nmtlib.models.encoders import RNNS, EncoderOutput


@dataclass
class DecoderState:
    """Everything that changes from one decoder step to the next, per batch row."""

    h: Tensor  #: (L, B, H)
    c: Tensor | None  #: (L, B, H) for LSTMs
    feed: Tensor | None  #: (B, F) h̃_{t−1} for input feeding
    attention: dict[str, Tensor] = field(default_factory=dict)  #: mechanism state, batch-first
    t: int = 0  #: 0-based index of the next target position

    def index_select(self, index: Tensor) -> DecoderState:
        """Rows reordered/duplicated by ``index`` (beam search)."""
        sel1 = lambda x: None if x is None else x.index_select(1, index)  # noqa: E731
        sel0 = lambda x: None if x is None else x.index_select(0, index)  # noqa: E731
        return DecoderState(
            sel1(self.h), sel1(self.c), sel0(self.feed), {k: sel0(v) for k, v in self.attention.items()}, self.t
        )


class OutputLayer(nn.Module):
    """Maps (h_t, c_t, E y_{t−1}) to the features the generator projects onto the vocabulary."""

    size: int


class AttentionalOutput(OutputLayer):
    """Luong Eq. 5: h̃_t = tanh(W_c [c_t; h_t]); without attention h̃_t = h_t (the base model)."""

    def __init__(self, hidden_size: int, memory_size: int, attentional: bool) -> None:
        super().__init__()
        self.W_c = nn.Linear(memory_size + hidden_size, hidden_size, bias=False) if attentional else None
        self.size = hidden_size

    def forward(self, h: Tensor, context: Tensor | None, embedded: Tensor) -> Tensor:
        if self.W_c is None:
            return h
        return torch.tanh(self.W_c(torch.cat([context, h], 1)))


class MaxoutOutput(OutputLayer):
    """Bahdanau et al. 2015, deep output (appendix A.2.2): t̃ = U_o s_i + V_o E y_{i−1} + C_o c_i,
    t_i = max over pairs of t̃ (maxout, pool 2), then softmax(W_o t_i)."""

    def __init__(self, hidden_size: int, memory_size: int, embedding_size: int, size: int, pool: int = 2) -> None:
        super().__init__()
        self.pool = pool
        self.U_o = nn.Linear(hidden_size, size * pool)
        self.V_o = nn.Linear(embedding_size, size * pool, bias=False)
        self.C_o = nn.Linear(memory_size, size * pool, bias=False)
        self.size = size

    def forward(self, h: Tensor, context: Tensor | None, embedded: Tensor) -> Tensor:
        t = self.U_o(h) + self.V_o(embedded) + self.C_o(context)
        return t.view(t.shape[0], self.size, self.pool).max(dim=2).values


class FullyConnectedOutput(OutputLayer):
    """Shu & Nakayama 2017 §5.1: a fully connected layer (600 units) before the softmax, over
    [h_t; c_t] with tanh *(choice: the paper names neither the inputs nor the activation)*."""

    def __init__(self, hidden_size: int, memory_size: int, size: int) -> None:
        super().__init__()
        self.W_f = nn.Linear(hidden_size + memory_size, size)
        self.size = size

    def forward(self, h: Tensor, context: Tensor | None, embedded: Tensor) -> Tensor:
        return torch.tanh(self.W_f(torch.cat([h, context], 1)))


class RecurrentDecoder(nn.Module):
    """Embedding → (attention) → multi-layer RNN → (attention) → output layer → generator.

    :param query: ``current`` (attend with h_t after the RNN) or ``previous`` (attend with
        h_{t−1} before it and feed c_t into the RNN)
    :param bridge: initial state — ``final`` (the encoder's final (h, c) of every layer, Luong),
        ``backward-tanh`` (s_0 = tanh(W_s ←h_1), Bahdanau; c_0 = 0 for LSTMs) or ``zero``
    """

    def __init__(
        self,
        vocab_size: int,
        embedding_size: int,
        hidden_size: int,
        memory_size: int,
        output: OutputLayer,
        attention: Attention | None = None,
        layers: int = 1,
        rnn: str = "lstm",
        query: str = "current",
        input_feed: bool = False,
        bridge: str = "final",
        encoder_hidden_size: int | None = None,
        dropout: float = 0.0,
        padding_idx: int = 0,
    ) -> None:
        super().__init__()
        if query not in ("current", "previous"):
            raise ValueError(f"query must be 'current' or 'previous', got {query!r}")
        self.embedding = nn.Embedding(vocab_size, embedding_size, padding_idx=padding_idx)
        self.attention = attention
        self.query = query
        self.input_feed = input_feed
        self.is_lstm = rnn == "lstm"
        self.layers = layers
        self.hidden_size = hidden_size
        self.memory_size = memory_size
        rnn_input = embedding_size
        if input_feed:
            rnn_input += output.size
        if query == "previous" and attention is not None:
            rnn_input += memory_size
        self.rnn = RNNS[rnn](
            rnn_input, hidden_size, num_layers=layers, batch_first=True, dropout=dropout if layers > 1 else 0.0
        )
        self.cells = StackedCells(self.rnn, split=embedding_size)
        self.output = output
        self.generator = nn.Linear(output.size, vocab_size)
        self.dropout = nn.Dropout(dropout)
        self.bridge = bridge
        if bridge == "backward-tanh":
            self.W_s = nn.Linear(encoder_hidden_size or hidden_size, hidden_size)

    # -- state -------------------------------------------------------------------------------
    def init_state(self, enc: EncoderOutput, memory: Memory) -> DecoderState:
        B = memory.values.shape[0]
        zeros = memory.values.new_zeros(self.layers, B, self.hidden_size)
        if self.bridge == "final":
            h, c = enc.final_h, enc.final_c
            if self.is_lstm and c is None:
                c = zeros
        elif self.bridge == "backward-tanh":
            h = torch.tanh(self.W_s(enc.backward_first)).unsqueeze(0).expand(self.layers, -1, -1).contiguous()
            c = zeros if self.is_lstm else None
        else:
            h, c = zeros, (zeros if self.is_lstm else None)
        feed = memory.values.new_zeros(B, self.output.size) if self.input_feed else None  # h̃_0 = 0
        attn = self.attention.init_state(memory) if self.attention is not None else {}
        return DecoderState(h.contiguous(), None if c is None else c.contiguous(), feed, attn, 0)

    def prepare_memory(self, memory: Memory) -> Memory:
        return self.attention.precompute(memory) if self.attention is not None else memory

    # -- one step ----------------------------------------------------------------------------
    def embed_all(self, tgt_in: Tensor) -> tuple[Tensor, Tensor]:
        """Embeddings (B, T, E) of a whole target prefix and their layer-0 input gates (B, T, G):
        one matrix product for every step instead of one per step (teacher forcing)."""
        emb = self.dropout(self.embedding(tgt_in))
        return emb, self.cells.embedding_gates(emb)

    def unroll(
        self, memory: Memory, state: DecoderState, emb: Tensor, emb_gates: Tensor, keep_attention: bool = False
    ) -> tuple[Tensor, Tensor | None, Tensor | None, Tensor | None]:
        """Teacher forcing over every position of :meth:`embed_all`'s output: output features
        (B, T, F), and per step the attention weights (B, T, S; with ``keep_attention``), score
        evaluations (B, T) and Flexible Attention gates (B, T), each None where not produced."""
        features, weights, evaluated, gates = [], [], [], []
        # weights and per-step slices taken once: each one's backward is then a single
        # accumulation, not a zero-filled gradient of the whole tensor per step
        rnn_weights = self.cells.weights()
        for emb_t, gates_t in zip(emb.unbind(1), emb_gates.unbind(1)):
            f, state, att = self.step(None, state, memory, (emb_t, gates_t), rnn_weights)
            features.append(f)
            if att is not None:
                evaluated.append(att.evaluated)
                if keep_attention:
                    weights.append(att.weights)
                if att.gate is not None:
                    gates.append(att.gate)
        stack = lambda xs: torch.stack(xs, 1) if xs else None  # noqa: E731
        return torch.stack(features, 1), stack(weights), stack(evaluated), stack(gates)

    def step(
        self, y_prev: Tensor | None, state: DecoderState, memory: Memory, embedded: tuple[Tensor, Tensor] | None = None,
        rnn_weights: list[LayerWeights] | None = None,
    ) -> tuple[Tensor, DecoderState, AttentionOutput | None]:
        """Consume y_{t−1} (B,), return the output features (B, F) for predicting y_t.

        ``embedded``: this step's slice of :meth:`embed_all`, when the caller has it (then
        ``y_prev`` is not needed); ``rnn_weights``: the time loop's :meth:`StackedCells.weights`."""
        if embedded is None:
            emb = self.dropout(self.embedding(y_prev))
            gates0 = self.cells.embedding_gates(emb)
        else:
            emb, gates0 = embedded
        attn_state = state.attention
        att: AttentionOutput | None = None
        rest = []
        if self.input_feed:
            rest.append(state.feed)
        if self.attention is not None and self.query == "previous":
            att, attn_state = self.attention(state.h[-1], memory, attn_state, state.t, emb)
            rest.append(att.context)
        h_t, h, c = self.cells(
            gates0, torch.cat(rest, 1) if len(rest) > 1 else (rest[0] if rest else None), state.h, state.c,
            self.rnn.dropout, self.training, rnn_weights,
        )
        if self.attention is not None and self.query == "current":
            att, attn_state = self.attention(h_t, memory, attn_state, state.t, emb)
        features = self.output(self.dropout(h_t), None if att is None else att.context, emb)
        new_state = DecoderState(h, c, features if self.input_feed else None, attn_state, state.t + 1)
        return self.dropout(features), new_state, att
