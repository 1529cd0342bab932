"""Teacher-forced training with the decoder's time loop replayed as CUDA graphs (``train.cuda_graphs``).

Why: input feeding makes the decoder a loop of T dependent steps, each a few dozen small kernels.
On a GPU the time goes to launching them, not to running them (a 4×1000 step at batch 128 is
about 40 µs of arithmetic but over 1 ms of Python and launch overhead, forward and backward).
A CUDA graph records the whole loop once per padded shape and replays it with one launch.

What is graphed: the decoder loop alone — ``prepare_memory``, ``init_state`` and every
:meth:`RecurrentDecoder.step` — through :func:`torch.cuda.make_graphed_callables`, which also
records its backward pass. The encoder (cuDNN over packed sequences), the target embeddings and
their layer-0 gates (:meth:`RecurrentDecoder.embed_all`), the generator and the loss stay eager:
each is one large kernel, and keeping them out keeps every graph small.

Shapes: a graph is fixed to (batch, source length, target length), so source and target lengths
are padded up to multiples of ``bucket`` and ``tgt_bucket`` (the padding is masked in attention
and ignored by the loss, so the loss and gradients are those of the unpadded batch). A batch of another size (the
last of an epoch) runs eagerly. All graphs share one memory pool: a training step always replays
one graph's forward and then its backward, so no two graphs are ever live at once.

Dropout inside a graph draws fresh masks on every replay (CUDA graphs advance the Philox
offset per replay).
"""

from __future__ import annotations

import contextlib
from typing import Callable

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmtlib.data.batching import Batch
from nmtlib.data.vocab import PAD_ID
from nmtlib.models.attention import Memory, length_mask
from nmtlib.models.encoders import EncoderOutput
from nmtlib.models.seq2seq import Seq2Seq
from nmtlib.train.loss import batch_loss, loss_terms


class _DecoderLoop(nn.Module):
    """The decoder loop as a module: encoder outputs and target embeddings in, output features out."""

    def __init__(self, model: Seq2Seq, layout: tuple[bool, bool, bool]) -> None:
        super().__init__()
        self.decoder = model.decoder
        self.has_c, self.has_backward, self.with_gates = layout

    def forward(self, *args: Tensor) -> tuple[Tensor, ...]:
        it = iter(args)
        values, mask, lengths, final_h = next(it), next(it), next(it), next(it)
        final_c = next(it) if self.has_c else None
        backward_first = next(it) if self.has_backward else None
        emb, emb_gates = next(it), next(it)
        dec = self.decoder
        memory = dec.prepare_memory(Memory(values, mask, lengths))
        state = dec.init_state(EncoderOutput(values, final_h, final_c, backward_first), memory)
        features, _, _, gates = dec.unroll(memory, state, emb, emb_gates)
        return (features, gates) if self.with_gates else (features,)


class _Functional:
    """``loop`` called with its parameters passed as arguments (``torch.func.functional_call``).

    Why: :func:`torch.cuda.make_graphed_callables` would otherwise capture the backward pass into
    the parameters' own gradient accumulators, which the eager autograd graphs of earlier steps
    keep alive on the default stream — and a capture cannot wait on the default stream. As
    arguments, the parameters are captured through fresh leaf copies; at replay their gradients
    come out of the graph and autograd accumulates them eagerly."""

    def __init__(self, loop: _DecoderLoop, n_args: int) -> None:
        self.loop = loop
        self.n_args = n_args
        # the target embedding and the generator run eagerly, outside the loop
        self.names = [n for n, p in loop.named_parameters()
                      if p.requires_grad and not n.startswith(("decoder.embedding.", "decoder.generator."))]

    def params(self) -> list[Tensor]:
        named = dict(self.loop.named_parameters())
        return [named[n] for n in self.names]

    def __call__(self, *args: Tensor) -> tuple[Tensor, ...]:
        params = dict(zip(self.names, args[self.n_args:]))
        return torch.func.functional_call(self.loop, params, args[: self.n_args], strict=False)


def graph_inputs(model: Seq2Seq, batch: Batch, S: int, T: int) -> tuple[list[Tensor], tuple[bool, bool]]:
    """The eager part before the loop, padded to (S, T): encoder outputs, mask, lengths, initial
    states and target embeddings with their layer-0 gates; and which optional states exist."""
    enc = model.encoder(batch.src, batch.src_lengths)
    values = F.pad(enc.states, (0, 0, 0, S - enc.states.shape[1]))
    lengths = batch.src_lengths.to(values.device, non_blocking=True)  # from the host, without a sync
    mask = length_mask(lengths, S)
    tgt_in = F.pad(batch.tgt_in, (0, T - batch.tgt_in.shape[1]), value=PAD_ID)
    emb, emb_gates = model.decoder.embed_all(tgt_in)
    args = [values, mask, lengths, enc.final_h]
    if enc.final_c is not None:
        args.append(enc.final_c)
    if enc.backward_first is not None:
        args.append(enc.backward_first)
    return args + [emb, emb_gates], (enc.final_c is not None, enc.backward_first is not None)


def _round_up(n: int, bucket: int) -> int:
    return -(-n // bucket) * bucket


class CudaGraphLoss:
    """Drop-in for :func:`nmtlib.train.loss.batch_loss` that replays graphed decoder loops.

    :param batch_size: the batch size graphs are recorded for; other sizes run eagerly
    :param bucket: source lengths are padded up to a multiple of this
    :param tgt_bucket: target lengths are padded up to a multiple of this. Each padded target
        position is a whole decoder step, forward and backward, while a padded source position is
        one more score; finer buckets mean more graphs and more memory. Luong 4×1000, bf16, batch
        128, WMT'14 lengths on an H100 (RESULTS.md, G3): 8 → 94.8K target tokens/s, 17 graphs,
        11.2 GB peak; 4 → 95.3–99.4K, 27 graphs, 14.0 GB; 2 → 102.4–103.6K, 41 graphs, 17.3 GB
    :param autocast: the autocast context training runs in (bf16), entered around capture too
    """

    def __init__(self, model: Seq2Seq, batch_size: int, bucket: int = 8, tgt_bucket: int = 2,
                 autocast: Callable[[], contextlib.AbstractContextManager] | None = None) -> None:
        if not torch.cuda.is_available():
            raise RuntimeError("train.cuda_graphs needs a CUDA device")
        self.model = model
        self.batch_size = batch_size
        self.bucket = bucket
        self.tgt_bucket = tgt_bucket
        self.autocast = autocast or contextlib.nullcontext
        self.pool = torch.cuda.graph_pool_handle()
        self.graphs: dict[tuple, tuple[_Functional, Callable]] = {}
        self.eager_batches = 0

    def padded_shape(self, batch: Batch) -> tuple[int, int]:
        """(source, target) lengths of the graph a batch replays: its own, rounded up to the buckets."""
        return _round_up(batch.src.shape[1], self.bucket), _round_up(batch.tgt_in.shape[1], self.tgt_bucket)

    def entry(self, args: list[Tensor], layout: tuple[bool, bool, bool], S: int, T: int
              ) -> tuple[_Functional, Callable]:
        """The loop function and its graph for this shape and precision, recorded on first use."""
        dtype = torch.get_autocast_dtype("cuda") if torch.is_autocast_enabled("cuda") else None
        key = (S, T, layout, str(dtype or "fp32"))
        if key not in self.graphs:
            fn = _Functional(_DecoderLoop(self.model, layout).train(), len(args))
            sample = tuple(a.detach().clone().requires_grad_(a.requires_grad) for a in [*args, *self.loop_params(fn)])
            self.graphs[key] = fn, torch.cuda.make_graphed_callables(fn, sample, allow_unused_input=True,
                                                                     pool=self.pool)
        return self.graphs[key]

    @staticmethod
    def loop_params(fn: _Functional) -> list[Tensor]:
        """The loop's parameters as graph inputs. Under autocast the weight matrices are cast once
        per batch, not at every step of the loop: graphs run with autocast's weight cache off, so
        inside the loop each use would cast again."""
        params = fn.params()
        if torch.is_autocast_enabled("cuda"):
            low = torch.get_autocast_dtype("cuda")
            params = [p.to(low) if p.dim() > 1 else p for p in params]
        return params

    def __call__(self, model: Seq2Seq, batch: Batch, beta: float = 0.0) -> tuple[Tensor, Tensor]:
        if batch.src.shape[0] != self.batch_size or not model.training:
            self.eager_batches += 1
            return batch_loss(model, batch, beta)
        S, T = self.padded_shape(batch)
        with self.autocast():
            args, (has_c, has_backward) = graph_inputs(model, batch, S, T)
            with_gates = bool(beta) and model.has_attention and model.decoder.attention.gated
            fn, graphed = self.entry(args, (has_c, has_backward, with_gates), S, T)
            outs = graphed(*args, *self.loop_params(fn))
            # the vocabulary projection runs on the whole padded (B, T) grid: selecting the real
            # positions first needs a host sync, and on the H100 that cost more (55K vs 63K
            # tokens/s, benchmarks/RESULTS.md) than the padding's arithmetic
            logits = model.decoder.generator(outs[0])
        tgt_out = F.pad(batch.tgt_out, (0, T - batch.tgt_out.shape[1]), value=PAD_ID)
        return loss_terms(logits, tgt_out, outs[1] if with_gates else None, beta)
