"""The device side of a search: one decoder step of an ensemble, its candidates packed for one
transfer to the host, and the next step's rows sent back.

A search (:mod:`nmtlib.decode.beam`) makes its decisions on the host and takes its steps through
the small :class:`Steps` protocol: :class:`EagerSteps` runs each step as it comes, and
:class:`nmtlib.decode.graphs.GraphedSearch` replays the same steps as CUDA graphs
(``decode.cuda_graphs``). Both import this module; neither imports the search.
"""

from __future__ import annotations

import math
from itertools import accumulate
from typing import NamedTuple, Protocol

import torch
from torch import Tensor

from nmtlib.data.batching import Batch
from nmtlib.data.vocab import BOS_ID, EOS_ID
from nmtlib.models.seq2seq import Seq2Seq


class Steps(Protocol):
    """The steps of one batch's search, as the search takes them."""

    vocab_size: int

    def step(self, t: int, A: int, width: int, K: int) -> PendingStep:
        """Launch step ``t`` for ``A`` sentences of ``width`` rows; the ``K`` of the beam."""

    def advance(self, rows: list[int], tokens: list[int], scores: list[float], memory_rows: list[int] | None,
                A: int, K: int) -> None:
        """Feed the next step: the row each new row extends, its token and its score."""


class StepSource(Protocol):
    """What makes the :class:`Steps` of a batch (:class:`nmtlib.decode.graphs.GraphedSteps`)."""

    ensemble: Ensemble

    def search(self, batch: Batch, lane: int = 0) -> Steps:
        ...


def pinned(host: Tensor, device: torch.device) -> Tensor:
    """``host`` in pinned memory when it is bound for CUDA (a copy from pageable memory may wait
    for the stream's queued work), else as it is."""
    return host.pin_memory() if device.type == "cuda" else host


def to_device(host: Tensor, device: torch.device) -> Tensor:
    """``host`` on ``device`` without waiting for the device's queued work."""
    return pinned(host, device).to(device, non_blocking=True)


class PendingStep:
    """A step's host rows (a float64 matrix) and attention weights on their way to the host.

    On CUDA the rows are copied to pinned memory behind an event, so :meth:`result` waits for
    this step's work only, not for work queued after it (another search's step, with
    ``decode.in_flight`` > 1). ``.tolist()`` on the device tensor would wait for the whole stream."""

    def __init__(self, packed: Tensor, weights: Tensor | None) -> None:
        self.weights = weights
        self.event: torch.cuda.Event | None = None
        if packed.is_cuda:
            self.host = torch.empty(packed.shape, dtype=packed.dtype, pin_memory=True)
            self.host.copy_(packed, non_blocking=True)
            self.event = torch.cuda.Event()
            self.event.record()
        else:
            self.host = packed

    def result(self) -> tuple[list[list[float]], Tensor | None]:
        if self.event is not None:
            self.event.synchronize()
        return self.host.tolist(), self.weights


class Ensemble:
    """N models decoded in lockstep, with Flexible Attention's threshold ``tau`` (None = ∞);
    each model keeps its own memory and state."""

    def __init__(self, models: list[Seq2Seq], tau: float | None = None) -> None:
        if not models:
            raise ValueError("an ensemble needs at least one model")
        self.models = models
        self.tau = tau

    def start(self, batch: Batch):
        """Each model's encoding of ``batch`` and its initial decoder state, one row per sentence."""
        return [model.encode(batch.src, batch.src_lengths, self.tau) for model in self.models]

    def step(self, y_prev: Tensor, states):
        log_probs, weights, evaluated, new_states = [], [], [], []
        for model, (memory, state) in zip(self.models, states):
            lp, state, att = model.step(y_prev, state, memory)
            log_probs.append(lp)
            new_states.append((memory, state))
            if att is not None:
                weights.append(att.weights)
                evaluated.append(att.evaluated)
        if len(log_probs) == 1:
            lp = log_probs[0]
        else:
            lp = torch.logsumexp(torch.stack(log_probs), 0) - math.log(len(log_probs))
        w = torch.stack(weights).mean(0) if weights else None
        ev = torch.stack(evaluated).sum(0) if evaluated else None
        return lp, new_states, w, ev

    def graph_key(self, t: int) -> tuple | None:
        """What a CUDA graph of step ``t`` must be specific to (:mod:`nmtlib.decode.graphs`):
        each model's ``graph_key(t)``; None if any model's step cannot be recorded."""
        keys = [getattr(model, "graph_key", lambda t, tau: None)(t, self.tau) for model in self.models]
        return None if any(k is None for k in keys) else tuple(keys)

    @staticmethod
    def reorder(states, index: Tensor, memory_rows: Tensor | None = None):
        """Decoder states gathered at rows ``index``; the encodings at ``memory_rows`` when the
        batch's sentences or rows per sentence change."""
        return [(memory if memory_rows is None else memory.index_select(memory_rows), state.index_select(index))
                for memory, state in states]


class CandidateRow(NamedTuple):
    """Where each part of a sentence's host row of :func:`candidates` lies: the one layout that
    :func:`candidates` packs (in this order) and the search reads (by these slices)."""

    scores: slice  #: its n best total scores, best first
    indices: slice  #: their flat indices row·V + token
    eos: slice  #: each of its rows' ``<eos>`` log-probability (for the length limit)
    evaluations: slice  #: each of its rows' score evaluations (zeros without attention)

    @classmethod
    def of(cls, K: int, width: int, V: int) -> CandidateRow:
        """The layout for a beam of ``K``, ``width`` rows per sentence and ``V`` target words: the
        n = min(2K, width·V) best expansions (K to go on even if K end in ``<eos>``), then one
        value per row of each per-row part."""
        n = min(2 * K, width * V)
        sizes = (n, n, width, width)
        return cls(*(slice(end - size, end) for size, end in zip(sizes, accumulate(sizes))))

    @property
    def n(self) -> int:
        """The number of expansions a sentence's row holds."""
        return self.scores.stop - self.scores.start


def candidates(lp: Tensor, scores: Tensor, A: int, width: int, K: int, ev: Tensor | None) -> Tensor:
    """Everything the host needs from one beam step, as one (A, row length) float64 matrix to
    move in one transfer, a sentence's row laid out as :class:`CandidateRow` says: its n best
    expansions (total scores, then flat indices row·V + token, best first), then each row's
    ``<eos>`` log-probability and its score evaluations."""
    V = lp.shape[-1]
    layout = CandidateRow.of(K, width, V)
    eos = lp[:, EOS_ID].view(A, width).double()  # read before the totals overwrite lp
    # The totals are written over ``lp``, which nothing reads after this step: no second
    # (rows, V) tensor to allocate and fill, and the same sums. One topk over each sentence's
    # width·V totals. Two stages (each row's 2K best, then the sentence's) select the same
    # candidates but measured no faster on an H100 and slower on a CPU below about 10K target
    # words (benchmarks/RESULTS.md, G5).
    total = lp.view(A, width, V).add_(scores.unsqueeze(2)).view(A, width * V)
    top_scores, top_idx = total.topk(layout.n, dim=1)  # sorted
    counts = ev.view(A, width).double() if ev is not None else lp.new_zeros(A, width, dtype=torch.float64)
    parts = {"scores": top_scores.double(), "indices": top_idx.double(), "eos": eos, "evaluations": counts}
    return torch.cat([parts[name] for name in CandidateRow._fields], 1)


class EagerSteps:
    """The decoder steps of one batch's search, each run as it comes.

    :meth:`step` launches a step and returns its :class:`PendingStep`: the host rows of
    :func:`candidates` and the step's attention weights. :meth:`advance` takes the next step's
    rows: the previous row each one extends, its token and its score, and the rows of the
    encodings when the batch's sentences or rows per sentence change. :class:`nmtlib.decode.graphs.GraphedSearch` replays the same steps as CUDA graphs."""

    def __init__(self, ensemble: Ensemble, batch: Batch) -> None:
        self.ensemble = ensemble
        self.states = ensemble.start(batch)
        self.device = batch.src.device
        self.vocab_size = 0
        self.begin(batch.src.shape[0])

    def begin(self, B: int) -> None:
        """Step 0's inputs: ``<bos>`` and score 0 in one row per sentence."""
        self.y = torch.full((B,), BOS_ID, dtype=torch.long, device=self.device)
        self.scores = torch.zeros(B, 1, device=self.device)

    def step(self, t: int, A: int, width: int, K: int) -> PendingStep:
        lp, self.states, w, ev = self.ensemble.step(self.y, self.states)
        self.vocab_size = lp.shape[-1]
        return PendingStep(candidates(lp, self.scores, A, width, K, ev), w)  # one transfer

    def advance(self, rows: list[int], tokens: list[int], scores: list[float], memory_rows: list[int] | None,
                A: int, K: int) -> None:
        moved = to_device(torch.tensor([rows, tokens], dtype=torch.long), self.device)
        self.scores = to_device(torch.tensor(scores, dtype=torch.float32).view(A, K), self.device)
        self.reorder(moved[0], memory_rows)
        self.y = moved[1]

    def reorder(self, rows: Tensor, memory_rows: list[int] | None) -> None:
        mem = None if memory_rows is None else to_device(torch.tensor(memory_rows), self.device)
        self.states = self.ensemble.reorder(self.states, rows, mem)
