"""Beam-search steps replayed as CUDA graphs (``decode.cuda_graphs``).

Why: a decoder step for a few rows is a few dozen small kernels, and on a GPU launching them
from Python takes longer than running them. At beam 12 × batch 1 the eager search spent about
1.2 ms a step (benchmarks/RESULTS.md, G3), about as long as OpenNMT-py's. A recorded step is one
launch.

What is recorded: everything from one step's inputs to the host's candidates: the hypotheses'
states reordered by their backpointers, the ensemble's step function, and the top 2K
expansions per sentence packed for one transfer (:func:`~nmtlib.decode.steps.candidates`). The
encoder runs eagerly, and so does the Python bookkeeping of :func:`~nmtlib.decode.beam.beam_search`,
which is unchanged: it reads the same candidates and writes the same next rows, tokens and scores.

Shapes: a graph is fixed to (sentences, rows per sentence, source length). Each such shape has
a :class:`_Slot` of static buffers: the inputs (backpointers, tokens, scores), the encodings and
the decoder states; its graphs read the states from the slot and write the next states back.
When the batch's sentences change (step 0's one row per sentence becomes K, or a sentence
finishes), the states are reordered eagerly and copied into the slot of the new shape. Slots are
kept across the batches of a decode, up to ``max_shapes``, least recently used first out. Searches
in flight at the same time (``decode.in_flight``, :mod:`nmtlib.decode.interleave`) have a lane
number each, and each lane its own slots, so no search's states overwrite another's.

A step whose operations depend on the step index (``local-m``'s p_t = t, or a wrapper that
forces the output length) gets one graph per :meth:`~nmtlib.decode.steps.Ensemble.graph_key`.
Steps that read values on the host cannot be recorded: Flexible Attention with a threshold τ
when it bounds its windows there (``host_bounds``; on GPUs it bounds them on the device by
default). Such searches run eagerly.

All graphs share one memory pool, so they hold about one step's temporaries, not one set per
graph (a paper-scale step at beam 12 × batch 64 needs about 0.5 GB: its (768, 50K) logits,
log-probabilities and totals). That is safe because the graphs replay one after another on one
stream, and each replay's outputs (the packed candidates, the attention weights) are copied out
by work queued right behind it, before any other replay: a later replay may overwrite the
outputs, never the states, which live in the slots' buffers outside the pool.

A step is recorded at the second use of its shape and key (``record_after``), and the first
use runs the same function eagerly: at batch 30 with every sentence's shape new, recording at
first use made decoding slower than the eager search (benchmarks/RESULTS.md, G4). The recording
use runs the step eagerly on the side stream the graph is then recorded on, so the step's real
work doubles as the warm-up a capture needs.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import fields, replace
from typing import Any, Callable

import torch
from torch import Tensor

from nmtlib.data.batching import Batch
from nmtlib.data.vocab import BOS_ID
from nmtlib.decode.steps import EagerSteps, Ensemble, PendingStep, candidates, pinned, to_device


def _map(obj: Any, fn: Callable[[Tensor], Tensor]) -> Any:
    """A Memory or DecoderState with ``fn`` applied to each tensor field (and dict entry)."""
    changes: dict[str, Any] = {}
    for f in fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, Tensor):
            changes[f.name] = fn(v)
        elif isinstance(v, dict):
            changes[f.name] = {k: fn(x) for k, x in v.items()}
    return replace(obj, **changes)


def _tensors(obj: Any) -> list[Tensor]:
    out: list[Tensor] = []
    for f in fields(obj):
        v = getattr(obj, f.name)
        if isinstance(v, Tensor):
            out.append(v)
        elif isinstance(v, dict):
            out += [v[k] for k in sorted(v)]
    return out


def _copy(dst: Any, src: Any) -> None:
    for d, s in zip(_tensors(dst), _tensors(src), strict=True):
        d.copy_(s)


class _Slot:
    """Static buffers of one shape: A sentences × ``width`` rows, one source length."""

    def __init__(self, states: list, A: int, width: int) -> None:
        self.A, self.width = A, width
        self.states = [(_map(m, torch.clone), _map(s, torch.clone)) for m, s in states]
        rows = A * width
        device = states[0][0].values.device
        # backpointers, tokens and scores of the step's rows, in one buffer for one transfer
        self.inputs = torch.zeros(3 * rows, dtype=torch.float64, device=device)
        self.graphs: dict[tuple, tuple[torch.cuda.CUDAGraph, tuple[Tensor, Tensor | None]]] = {}
        self.vocab_size = 0  #: set by the first step
        self.uses: dict[tuple, int] = {}  #: steps run per graph key before its graph was recorded

    def load(self, states: list) -> None:
        for (dm, ds), (sm, ss) in zip(self.states, states, strict=True):
            _copy(dm, sm)
            _copy(ds, ss)

    def set_inputs(self, rows: list[int], tokens: list[int], scores: list[float]) -> None:
        host = torch.tensor(rows + tokens + scores, dtype=torch.float64)
        self.inputs.copy_(pinned(host, self.inputs.device), non_blocking=True)  # one copy, straight into the slot


class GraphedSteps:
    """Recorded beam-search steps of one ensemble, kept across the batches of a decode.

    :param record: record CUDA graphs (needs CUDA). ``False`` runs the very functions the graphs
        would record, eagerly, with the same static buffers: tests check that path on CPU.
    :param max_shapes: slots (shapes) kept; each holds its graphs' memory
    :param record_after: a step is recorded at this use of its shape and key; earlier uses run eagerly
    """

    def __init__(self, ensemble: Ensemble, record: bool = True, max_shapes: int = 32, record_after: int = 2) -> None:
        if record and not torch.cuda.is_available():
            raise RuntimeError("decode.cuda_graphs needs a CUDA device")
        self.ensemble = ensemble
        self.record = record
        self.max_shapes = max_shapes
        self.record_after = record_after
        self.slots: OrderedDict[tuple[int, int, int, int], _Slot] = OrderedDict()
        self.stream = torch.cuda.Stream() if record else None
        self.pool = torch.cuda.graph_pool_handle() if record else None  # shared (module docstring)
        self.recorded = 0  #: graphs recorded
        self.replayed = 0  #: steps replayed from a graph

    @property
    def supported(self) -> bool:
        """Whether the ensemble's steps can be recorded (see the module docstring)."""
        return self.ensemble.graph_key(0) is not None

    def search(self, batch: Batch, lane: int = 0) -> EagerSteps:
        """The steps of one batch's search: graphed where supported, else eager. Searches in
        flight at the same time (``decode.in_flight``) use different ``lane`` numbers."""
        return GraphedSearch(self, batch, lane) if self.supported else EagerSteps(self.ensemble, batch)

    def slot(self, states: list, A: int, width: int, lane: int = 0) -> _Slot:
        """The slot of this shape in ``lane``, holding a copy of ``states``."""
        key = (lane, A, width, states[0][0].values.shape[1])
        slot = self.slots.pop(key, None)
        if slot is None:
            slot = _Slot(states, A, width)
            while len(self.slots) >= self.max_shapes:
                self.slots.popitem(last=False)
        else:
            slot.load(states)
        self.slots[key] = slot
        return slot

    def _step(self, slot: _Slot, K: int) -> tuple[Tensor, Tensor | None]:
        """One step on the slot's buffers: what a graph records."""
        rows = slot.A * slot.width
        inp = slot.inputs
        index, y = inp[:rows].long(), inp[rows:2 * rows].long()
        scores = inp[2 * rows:].float().view(slot.A, slot.width)
        selected = [(m, s.index_select(index)) for m, s in slot.states]
        lp, new_states, w, ev = self.ensemble.step(y, selected)
        slot.vocab_size = lp.shape[-1]
        packed = candidates(lp, scores, slot.A, slot.width, K, ev)
        for (_, static), (_, new) in zip(slot.states, new_states, strict=True):
            _copy(static, new)
        return packed, w

    def run(self, slot: _Slot, t: int, K: int) -> PendingStep:
        """Step ``t`` on ``slot``: the host rows of the candidates and the step's attention weights."""
        for _, s in slot.states:
            s.t = t
        key = self.ensemble.graph_key(t)
        entry = slot.graphs.get(key)
        if entry is None:
            slot.uses[key] = uses = slot.uses.get(key, 0) + 1
            if not self.record or uses < self.record_after:
                return PendingStep(*self._step(slot, K))
            # the real step, eagerly on the capture stream (its warm-up), then the recording,
            # which runs nothing: the states the step just wrote stay as they are
            current, side = torch.cuda.current_stream(), self.stream
            side.wait_stream(current)
            with torch.cuda.stream(side):
                packed, w = self._step(slot, K)
                w = None if w is None else w.clone()
                graph = torch.cuda.CUDAGraph()
                graph.capture_begin(pool=self.pool)
                try:
                    outputs = self._step(slot, K)
                finally:
                    graph.capture_end()
            current.wait_stream(side)
            slot.graphs[key] = graph, outputs
            self.recorded += 1
            return PendingStep(packed, w)
        graph, (packed, w) = entry
        graph.replay()
        self.replayed += 1
        # copied behind the replay, before anything queued later (another lane's replay, which
        # may reuse the pool's memory) can overwrite the graph's own outputs
        return PendingStep(packed, None if w is None else w.clone())


class GraphedSearch(EagerSteps):
    """One batch's steps, replayed from :class:`GraphedSteps`' graphs."""

    def __init__(self, graphs: GraphedSteps, batch: Batch, lane: int = 0) -> None:
        self.graphs = graphs
        self.lane = lane
        super().__init__(graphs.ensemble, batch)

    def begin(self, B: int) -> None:
        """Step 0's inputs, in the slot of one row per sentence."""
        self.slot = self.graphs.slot(self.states, B, 1, self.lane)
        self.states = self.slot.states
        self.slot.set_inputs(list(range(B)), [BOS_ID] * B, [0.0] * B)

    def step(self, t: int, A: int, width: int, K: int) -> PendingStep:
        assert (A, width) == (self.slot.A, self.slot.width)
        pending = self.graphs.run(self.slot, t, K)
        self.vocab_size = self.slot.vocab_size
        return pending

    def advance(self, rows: list[int], tokens: list[int], scores: list[float], memory_rows: list[int] | None,
                A: int, K: int) -> None:
        if memory_rows is not None:
            # new sentences or rows per sentence: reorder eagerly into the slot of the new shape
            self.reorder(to_device(torch.tensor(rows), self.device), memory_rows)
            self.slot = self.graphs.slot(self.states, A, K, self.lane)
            self.states = self.slot.states
            rows = list(range(A * K))
        self.slot.set_inputs(rows, tokens, scores)
