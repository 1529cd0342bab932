"""One time step of a stacked LSTM / GRU, computed with the weights of an ``nn.LSTM`` / ``nn.GRU``.

Why not call the ``nn.LSTM`` module on a length-1 sequence: an input-feeding decoder must run one
step at a time, and the module's per-call set-up (cuDNN descriptors on GPU, the oneDNN RNN
primitive on CPU) costs more than the step itself at these sizes — `benchmarks/rnn_step.py`
measured 1.4× (2×256) to 2.0× (4×1000) on CPU for per-layer cells. The parameters stay those of
the module (``weight_ih_l{k}``, ``weight_hh_l{k}``, ``bias_ih_l{k}``, ``bias_hh_l{k}``), so
checkpoints are unchanged and the encoder keeps the module (cuDNN over whole sequences).

The input projection of a layer can be given precomputed as *input gates* ``(B, G)``: training
projects the embeddings of all target positions with one matrix product before the time loop
(:meth:`StackedCells.embedding_gates`) and each step adds only the recurrent inputs.
On CUDA the gate non-linearities run in PyTorch's fused cell kernels.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import Tensor, nn


@dataclass(frozen=True)
class LayerWeights:
    """One layer (one direction) of an ``nn.LSTM`` / ``nn.GRU``, as the cells consume it.

    Taken once per batch, not once per step: a slice of a weight taken inside the time loop
    costs a zero-filled gradient of the whole weight per step in backward."""

    w_ih: Tensor  #: input weights; for layer 0 of a decoder only the columns after the embedding
    w_hh: Tensor
    bias_x: Tensor  #: bias of the input gates: b_ih + b_hh for LSTMs, b_ih for GRUs
    b_hh: Tensor | None  #: a GRU's hidden bias (inside the reset gate); None for LSTMs


def layer_weights(rnn: nn.RNNBase, k: int, reverse: bool = False, split: int = 0) -> LayerWeights:
    """Layer ``k`` (its backward direction with ``reverse``) of ``rnn``; ``split`` input columns
    are left out of ``w_ih`` (they come in as precomputed gates)."""
    sfx = f"_l{k}" + ("_reverse" if reverse else "")
    w = lambda name: getattr(rnn, name + sfx)  # noqa: E731
    is_lstm = isinstance(rnn, nn.LSTM)
    w_ih, w_hh = w("weight_ih"), w("weight_hh")
    device = w_ih.device.type
    if torch.is_autocast_enabled(device):
        # cast once here, not at every step: autocast caches casts of whole parameters only, and
        # a slice of one was cast (and its gradient accumulated in float32) once per step
        low = torch.get_autocast_dtype(device)
        w_ih, w_hh = w_ih.to(low), w_hh.to(low)
    return LayerWeights(
        w_ih[:, split:] if split else w_ih,
        w_hh,
        w("bias_ih") + w("bias_hh") if is_lstm else w("bias_ih"),
        None if is_lstm else w("bias_hh"),
    )


class StackedCells:
    """Step function over the layers of ``rnn`` (an ``nn.LSTM`` or ``nn.GRU``, unidirectional).

    Gate order and equations are PyTorch's (LSTM: i, f, g, o; GRU: r, z, n with the reset gate
    applied to the hidden projection including its bias), so a step equals the module's.
    """

    def __init__(self, rnn: nn.RNNBase, split: int) -> None:
        if rnn.bidirectional or not rnn.bias:
            raise ValueError("StackedCells needs a unidirectional RNN with biases")
        self.rnn = rnn
        self.is_lstm = isinstance(rnn, nn.LSTM)
        self.split = split  #: columns of layer 0's input that are the embedding (precomputable)

    def weights(self) -> list[LayerWeights]:
        """Every layer's weights; a time loop takes them once and passes them to each step."""
        return [layer_weights(self.rnn, k, split=self.split if k == 0 else 0) for k in range(self.rnn.num_layers)]

    def embedding_gates(self, emb: Tensor) -> Tensor:
        """Layer 0's input gates from the embedding part of its input, ``(..., E)`` → ``(..., G)``,
        with the biases that do not depend on the hidden state."""
        w0 = layer_weights(self.rnn, 0)
        return F.linear(emb, w0.w_ih[:, : self.split], w0.bias_x)

    def __call__(
        self, gates0: Tensor, rest: Tensor | None, h: Tensor, c: Tensor | None, dropout: float, training: bool,
        weights: list[LayerWeights] | None = None,
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """One step. ``gates0`` (B, G): :meth:`embedding_gates` of this step; ``rest`` (B, ·): the
        rest of layer 0's input (input feeding, context) or None; ``h``/``c`` (L, B, H);
        ``weights``: :meth:`weights`, taken once by the caller's time loop.
        Returns the top layer's output (B, H) and the new (L, B, H) states."""
        weights = weights if weights is not None else self.weights()
        hs, cs = [], []
        x = None
        for k, w in enumerate(weights):
            if k == 0:
                x_in, bias_x = rest, gates0
            else:
                x_in, bias_x = (F.dropout(x, dropout, training) if dropout else x), w.bias_x
            if self.is_lstm:
                hk, ck = _lstm_cell(x_in, h[k], c[k], w.w_ih, w.w_hh, bias_x)
                cs.append(ck)
            else:
                hk = _gru_cell(x_in, h[k], w.w_ih, w.w_hh, bias_x, w.b_hh)
            hs.append(hk)
            x = hk
        return x, torch.stack(hs), (torch.stack(cs) if cs else None)


def packed_layer(
    gates: Tensor, sizes: list[int], w: LayerWeights, is_lstm: bool, reverse: bool = False
) -> tuple[Tensor, Tensor, Tensor | None]:
    """One direction of one RNN layer over a batch sorted by decreasing length, as cells.

    ``gates`` (S, B, G): the time-major input gates ``x W_ihᵀ + bias_x``, one matrix product
    for the whole batch; ``sizes[t]``: rows longer than t (a packed sequence's batch sizes).
    Returns the outputs (S, B, H), zero at padding, and each row's final h (and c) (B, H): the
    state after its last word, or after its first word when ``reverse``.

    Why not ``nn.LSTM`` over a ``PackedSequence`` when training on CPU: ATen's packed loop
    slices each step out of the (tokens, G) input gates, and every slice's backward zero-fills a
    gradient of the whole (tokens, G) matrix — O(S · tokens) per layer, 15% of a training step
    at 2×256 (benchmarks/RESULTS.md, hotspot A). Here each step's gradient is (B, G)."""
    S, B = len(sizes), gates.shape[1]
    H = w.w_hh.shape[1]
    steps = gates.unbind(0)
    outs: list[Tensor] = [gates.new_zeros(0)] * S
    h = c = None
    ended_h: list[Tensor] = []
    ended_c: list[Tensor] = []
    for t in (range(S - 1, -1, -1) if reverse else range(S)):
        n = sizes[t]
        if h is None:
            h = gates.new_zeros(n, H)
            c = gates.new_zeros(n, H) if is_lstm else None
        elif n > h.shape[0]:  # reverse: longer rows start here, from a zero state
            grow = gates.new_zeros(n - h.shape[0], H)
            h = torch.cat([h, grow])
            c = torch.cat([c, grow]) if c is not None else None
        elif n < h.shape[0]:  # forward: rows n.. have read their last word
            ended_h.append(h[n:])
            h = h[:n]
            if c is not None:
                ended_c.append(c[n:])
                c = c[:n]
        if is_lstm:
            h, c = _lstm_cell(None, h, c, w.w_ih, w.w_hh, steps[t][:n])
        else:
            h = _gru_cell(None, h, w.w_ih, w.w_hh, steps[t][:n], w.b_hh)
        outs[t] = F.pad(h, (0, 0, 0, B - n)) if n < B else h
    # rows that ended earlier are further down the batch: the last to end comes first
    final_h = torch.cat([h, *reversed(ended_h)])
    final_c = torch.cat([c, *reversed(ended_c)]) if c is not None else None
    return torch.stack(outs), final_h, final_c


def _cuda_gates(x: Tensor | None, h: Tensor, w_ih: Tensor, w_hh: Tensor, bias_x: Tensor) -> tuple[Tensor, Tensor]:
    """Input and hidden gates for PyTorch's fused CUDA cell kernels, in float32 or wider.

    Under bf16 autocast the products run in bf16, but the gate non-linearities and the state they
    update stay float32: an LSTM's cell state (a GRU's hidden state) is carried through the whole
    sentence, and rounded to bf16's 8 bits at every step it trained a 2×256 multi30k-deen model to
    dev perplexity 30.7 after two epochs against float32's 23.7 (benchmarks/RESULTS.md, G7). The
    CPU's cells keep float32 states already."""
    if x is None:
        igates = bias_x
    elif bias_x.dim() == 2:
        igates = torch.addmm(bias_x, x, w_ih.t()) if bias_x.dtype == x.dtype else F.linear(x, w_ih) + bias_x
    else:
        igates = F.linear(x, w_ih, bias_x)
    hgates = F.linear(h, w_hh)
    dtype = torch.promote_types(torch.promote_types(igates.dtype, hgates.dtype), torch.float32)
    return igates.to(dtype), hgates.to(dtype)


def _cpu_inputs(x: Tensor | None, h: Tensor, w_ih: Tensor, bias_x: Tensor) -> tuple[Tensor, Tensor, Tensor]:
    """(input, w_ih, b_ih) for ATen's CPU cells, which add a 2-D input bias through addmm: the
    precomputed gates pass as that bias, and a missing input as an empty one."""
    if x is None:
        x, w_ih = h.new_zeros(h.shape[0], 0), w_ih[:, :0]
    return x, w_ih, (bias_x if bias_x.dim() == 2 else bias_x.unsqueeze(0)).expand(h.shape[0], -1)


def _lstm_cell(x: Tensor | None, h: Tensor, c: Tensor, w_ih: Tensor, w_hh: Tensor, bias_x: Tensor):
    if h.is_cuda:
        igates, hgates = _cuda_gates(x, h, w_ih, w_hh, bias_x)
        with torch.autocast("cuda", enabled=False):  # autocast would cast the fused cell to bf16
            hy, cy, _ = torch.ops.aten._thnn_fused_lstm_cell(igates, hgates, c.to(igates.dtype))
        return hy, cy
    x, w_ih, b_ih = _cpu_inputs(x, h, w_ih, bias_x)
    return torch.lstm_cell(x, (h, c), w_ih, w_hh, b_ih, None)


def _gru_cell(x: Tensor | None, h: Tensor, w_ih: Tensor, w_hh: Tensor, bias_x: Tensor, b_hh: Tensor) -> Tensor:
    if h.is_cuda:
        igates, hgates = _cuda_gates(x, h, w_ih, w_hh, bias_x)
        # the fused kernel adds the hidden bias only when an input bias is given too (it is in igates)
        b_hh = b_hh.to(igates.dtype)
        with torch.autocast("cuda", enabled=False):  # as for the LSTM: the state stays float32
            hy, _ = torch.ops.aten._thnn_fused_gru_cell(igates, hgates, h.to(igates.dtype), torch.zeros_like(b_hh), b_hh)
        return hy
    x, w_ih, b_ih = _cpu_inputs(x, h, w_ih, bias_x)
    return torch.gru_cell(x, h, w_ih, w_hh, b_ih, b_hh)
