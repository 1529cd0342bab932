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

import torch
import torch.nn.functional as F
from torch import Tensor, nn


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

    def _w(self, name: str, k: int) -> Tensor:
        return getattr(self.rnn, f"{name}_l{k}")

    def embedding_gates(self, emb: Tensor) -> Tensor:
        """Layer 0's input gates from the embedding part of its input, ``(..., E)`` → ``(..., G)``,
        with the biases that do not depend on the hidden state."""
        w = self._w("weight_ih", 0)[:, : self.split]
        bias = self._w("bias_ih", 0)
        if self.is_lstm:
            bias = bias + self._w("bias_hh", 0)
        return F.linear(emb, w, bias)

    def __call__(
        self, gates0: Tensor, rest: Tensor | None, h: Tensor, c: Tensor | None, dropout: float, training: bool
    ) -> tuple[Tensor, Tensor, Tensor | None]:
        """One step. ``gates0`` (B, G): :meth:`embedding_gates` of this step; ``rest`` (B, ·): the
        rest of layer 0's input (input feeding, context) or None; ``h``/``c`` (L, B, H).
        Returns the top layer's output (B, H) and the new (L, B, H) states."""
        hs, cs = [], []
        x = None
        for k in range(self.rnn.num_layers):
            if k == 0:
                w_ih = self._w("weight_ih", 0)[:, self.split:]
                x_in, bias_x = rest, gates0
            else:
                x = F.dropout(x, dropout, training) if dropout else x
                w_ih, x_in = self._w("weight_ih", k), x
                bias_x = self._w("bias_ih", k) + self._w("bias_hh", k) if self.is_lstm else self._w("bias_ih", k)
            w_hh = self._w("weight_hh", k)
            if self.is_lstm:
                hk, ck = _lstm_cell(x_in, h[k], c[k], w_ih, w_hh, bias_x)
                cs.append(ck)
            else:
                hk = _gru_cell(x_in, h[k], w_ih, w_hh, bias_x, self._w("bias_hh", k))
            hs.append(hk)
            x = hk
        return x, torch.stack(hs), (torch.stack(cs) if cs else None)


def _cuda_gates(x: Tensor | None, h: Tensor, w_ih: Tensor, w_hh: Tensor, bias_x: Tensor) -> tuple[Tensor, Tensor]:
    """Input and hidden gates for PyTorch's fused CUDA cell kernels, in one dtype."""
    if x is None:
        igates = bias_x
    elif bias_x.dim() == 2:
        igates = torch.addmm(bias_x, x, w_ih.t()) if bias_x.dtype == x.dtype else F.linear(x, w_ih) + bias_x
    else:
        igates = F.linear(x, w_ih, bias_x)
    hgates = F.linear(h, w_hh)
    dtype = torch.promote_types(igates.dtype, hgates.dtype)
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
        hy, cy, _ = torch.ops.aten._thnn_fused_lstm_cell(igates, hgates, c.to(igates.dtype))
        return hy, cy
    x, w_ih, b_ih = _cpu_inputs(x, h, w_ih, bias_x)
    return torch.lstm_cell(x, (h, c), w_ih, w_hh, b_ih, None)


def _gru_cell(x: Tensor | None, h: Tensor, w_ih: Tensor, w_hh: Tensor, bias_x: Tensor, b_hh: Tensor) -> Tensor:
    if h.is_cuda:
        igates, hgates = _cuda_gates(x, h, w_ih, w_hh, bias_x)
        # the fused kernel adds the hidden bias only when an input bias is given too (it is in igates)
        b_hh = b_hh.to(igates.dtype)
        hy, _ = torch.ops.aten._thnn_fused_gru_cell(igates, hgates, h.to(igates.dtype), torch.zeros_like(b_hh), b_hh)
        return hy
    x, w_ih, b_ih = _cpu_inputs(x, h, w_ih, bias_x)
    return torch.gru_cell(x, h, w_ih, w_hh, b_ih, b_hh)
