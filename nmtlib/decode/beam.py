"""Batched beam search over one model or an ensemble, and greedy search.

B sentences × K hypotheses are decoded as B·K rows at once. Each step keeps the 2K best
expansions per sentence: those ending in ``<eos>`` within the first K ranks are finished, the
first K others continue — so the beam never shrinks. A sentence is done once it has K finished
hypotheses and none alive can beat the best of them, or at its length limit
(``max_len_ratio`` × source length + 10). Everything that decides a sentence's output depends
on that sentence alone, so decoding it alone or in a batch gives the same translation.

An ensemble averages the models' per-step output *distributions* (Luong et al. 2015, Table 1–2):
log p = log((1/N) Σ_n p_n). Attention weights, used for unknown-word replacement, are averaged too.

History is kept as per-step backpointers, not by copying prefixes, so a step costs O(B·K).
Step 0 decodes one row per sentence, and finished sentences leave the batch (as in OpenNMT-py
and fairseq), so no row is computed that cannot change a result.

The search's decisions run in Python on host lists. The device work of a step (the decoder
step, the top 2K expansions per sentence, packed by :func:`candidates` for one transfer) sits
behind :class:`EagerSteps`, which :class:`nmtlib.decode.graphs.GraphedSearch` replaces with
CUDA-graph replays (``decode.cuda_graphs``).

Each search is written as a generator (:func:`beam_search_steps`, :func:`greedy_search_steps`)
that yields once per step, after launching the step's device work and before reading it: a
driver can then run another search's bookkeeping while the device computes
(:mod:`nmtlib.decode.interleave`, ``decode.in_flight``). :func:`beam_search` and
:func:`greedy_search` run one to its end.
"""

from __future__ import annotations

import math
from collections.abc import Generator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeVar

import numpy as np
import torch
from torch import Tensor

from nmtlib.data.batching import Batch
from nmtlib.data.vocab import BOS_ID, EOS_ID
from nmtlib.metrics.window import sentence_window
from nmtlib.models.seq2seq import Seq2Seq

if TYPE_CHECKING:
    from nmtlib.decode.graphs import GraphedSteps


T = TypeVar("T")

#: a search as a generator: yields after launching each step's device work, returns its result
Search = Generator[None, None, T]


def run_to_end(search: Search[T]) -> T:
    """The result of ``search``, run without interruption."""
    while True:
        try:
            next(search)
        except StopIteration as stop:
            return stop.value


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


@dataclass
class Hypothesis:
    tokens: list[int]  #: output ids without <eos>
    score: float  #: log-probability (length-normalised if asked)
    attention: np.ndarray | None  #: (len(tokens)+1, S): weights of the step that predicted each token and <eos>
    scores_computed: int = 0  #: score evaluations summed over every hypothesis at every step
    hypothesis_steps: int = 0  #: number of (hypothesis, step) pairs those evaluations were spread over
    window_per_step: list[float] = field(default_factory=list)  #: mean evaluations per live hypothesis, per step

    @property
    def average_window(self) -> float:
        """Shu & Nakayama's window size: scores computed per step, averaged over beam hypotheses."""
        return sentence_window(self.scores_computed, self.hypothesis_steps)


@dataclass
class _Finished:
    score: float
    raw_score: float
    step: int  #: step at which <eos> was chosen
    row: int  #: beam row (b·K + k) that chose it at that step


@dataclass
class _SentenceState:
    finished: list[_Finished] = field(default_factory=list)
    done: bool = False
    scores_computed: int = 0
    hypothesis_steps: int = 0
    window_per_step: list[float] = field(default_factory=list)


class Ensemble:
    """N models decoded in lockstep; each keeps its own memory and state."""

    def __init__(self, models: list[Seq2Seq]) -> None:
        if not models:
            raise ValueError("an ensemble needs at least one model")
        self.models = models

    def start(self, batch: Batch):
        """Each model's encoding of ``batch`` and its initial decoder state, one row per sentence."""
        return [model.encode(batch.src, batch.src_lengths) for model in self.models]

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
        keys = [getattr(model, "graph_key", lambda t: None)(t) for model in self.models]
        return None if any(k is None for k in keys) else tuple(keys)

    @staticmethod
    def reorder(states, index: Tensor, memory_rows: Tensor | None = None):
        """Decoder states gathered at rows ``index``; the encodings at ``memory_rows`` when the
        batch's sentences or rows per sentence change."""
        return [(memory if memory_rows is None else memory.index_select(memory_rows), state.index_select(index))
                for memory, state in states]


def max_lengths(src_lengths: Tensor, ratio: float) -> list[int]:
    return [int(math.ceil(ratio * int(n))) + 10 for n in src_lengths]


def greedy_search(ensemble: Ensemble, batch: Batch, max_len_ratio: float = 2.0) -> list[Hypothesis]:
    """Argmax decoding; the reference beam search must agree with it at beam size 1."""
    return run_to_end(greedy_search_steps(ensemble, batch, max_len_ratio))


@torch.no_grad()  # on a generator: no gradients while it runs, whoever resumes it
def greedy_search_steps(ensemble: Ensemble, batch: Batch, max_len_ratio: float = 2.0) -> Search[list[Hypothesis]]:
    """:func:`greedy_search` as a generator that yields once per step (module docstring)."""
    B = batch.src.shape[0]
    limits = max_lengths(batch.src_lengths, max_len_ratio)
    states = ensemble.start(batch)
    y = torch.full((B,), BOS_ID, dtype=torch.long, device=batch.src.device)
    tokens: list[list[int]] = [[] for _ in range(B)]
    steps: list[list[int]] = [[] for _ in range(B)]  # per sentence, the decoder steps it took part in
    weights: list[Tensor] = []
    score = [0.0] * B
    computed = [0] * B
    per_step: list[list[float]] = [[] for _ in range(B)]
    done = [False] * B
    for t in range(max(limits)):
        lp, states, w, ev = ensemble.step(y, states)
        best = lp.argmax(-1)
        # one transfer per step: the argmax, its log-probability, <eos>'s, and the evaluations
        cols = [best.double(), lp.gather(1, best.unsqueeze(1)).squeeze(1).double(), lp[:, EOS_ID].double()]
        if ev is not None:
            cols.append(ev.double())
            weights.append(w)
        pending = PendingStep(torch.stack(cols, 1), None)
        yield
        host, _ = pending.result()
        for b in range(B):
            if done[b]:
                continue
            row = host[b]
            tok = int(row[0]) if t + 1 < limits[b] else EOS_ID
            score[b] += row[1] if tok == int(row[0]) else row[2]
            if w is not None:
                steps[b].append(t)
                computed[b] += int(row[3])
                per_step[b].append(row[3])
            if tok == EOS_ID:
                done[b] = True
            else:
                tokens[b].append(tok)
        if all(done):
            break
        y = best
    host_w = [x.float().cpu().numpy() for x in weights]
    return [
        Hypothesis(tokens[b], score[b], np.stack([host_w[t][b] for t in steps[b]]) if steps[b] else None, computed[b],
                   len(tokens[b]) + 1 if weights else 0, per_step[b])
        for b in range(B)
    ]


def candidates(lp: Tensor, scores: Tensor, A: int, width: int, K: int, ev: Tensor | None) -> Tensor:
    """Everything the host needs from one beam step, as one (A, 2·n + 2·width) float64 matrix to
    move in one transfer: per sentence its n = min(2K, width·V) best expansions (total scores,
    then flat indices row·V + token, best first), then each row's ``<eos>`` log-probability (for
    the length limit) and its score evaluations (zeros without attention)."""
    V = lp.shape[-1]
    # One topk over each sentence's width·V totals. Two stages (each row's 2K best, then the
    # sentence's) select the same candidates but measured no faster on an H100 and slower on a
    # CPU below about 10K target words (benchmarks/RESULTS.md, G5).
    total = (scores.unsqueeze(2) + lp.view(A, width, V)).view(A, width * V)
    top_scores, top_idx = total.topk(min(2 * K, width * V), dim=1)  # sorted
    counts = ev.view(A, width).double() if ev is not None else lp.new_zeros(A, width, dtype=torch.float64)
    return torch.cat([top_scores.double(), top_idx.double(), lp[:, EOS_ID].view(A, width).double(), counts], 1)


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


def beam_search(
    ensemble: Ensemble, batch: Batch, beam: int = 12, max_len_ratio: float = 2.0, length_norm: bool = False,
    graphs: GraphedSteps | None = None,
) -> list[Hypothesis]:
    """Best hypothesis per sentence of ``batch`` (see the module docstring and
    :func:`beam_search_steps`)."""
    return run_to_end(beam_search_steps(ensemble, batch, beam, max_len_ratio, length_norm, graphs))


@torch.no_grad()  # on a generator: no gradients while it runs, whoever resumes it
def beam_search_steps(
    ensemble: Ensemble, batch: Batch, beam: int = 12, max_len_ratio: float = 2.0, length_norm: bool = False,
    graphs: GraphedSteps | None = None, lane: int = 0,
) -> Search[list[Hypothesis]]:
    """Best hypothesis per sentence of ``batch``, as a generator that yields once per step, after
    launching the step's device work and before reading it (module docstring).

    Work is spent only where hypotheses can differ: step 0 runs one row per sentence (all K
    hypotheses are the empty prefix), and a sentence leaves the batch once it is done, so the
    rows of the others no longer wait for the longest output.

    The bookkeeping runs on host lists: each step moves the 2K best candidates per sentence to
    the host in one transfer and the next rows, tokens and scores back in one, instead of one
    tiny device operation per hypothesis (which dominated on GPUs).

    ``graphs``: replay the steps as CUDA graphs recorded per shape (:mod:`nmtlib.decode.graphs`;
    ``decode.cuda_graphs``); the same search and the same results. Searches that are in flight
    at the same time need different ``lane`` numbers: each lane has its own graphs' buffers."""
    B, K = batch.src.shape[0], beam
    limits = max_lengths(batch.src_lengths, max_len_ratio)
    if graphs is not None and graphs.ensemble is not ensemble:
        raise ValueError("beam_search: `graphs` were made for another ensemble")
    steps = graphs.search(batch, lane) if graphs is not None else EagerSteps(ensemble, batch)
    NEG = float("-inf")
    active = list(range(B))  # sentences still decoded, in row order
    width = 1  # rows per active sentence: 1 at step 0, then K
    scores_l = [[0.0] for _ in range(B)]  # per active sentence, per row
    # per step: the row of the previous step each new row extends, and the token it chose; rows
    # are numbered within each step's batch, whose sentences shrink as they finish
    backptrs: list[list[int]] = []
    chosen: list[list[int]] = []
    weights: list[Tensor | None] = []  # per step: (rows, S) attention of the step
    sent = [_SentenceState() for _ in range(B)]

    for t in range(max(limits)):
        pending = steps.step(t, len(active), width, K)
        yield  # the device computes the step; another search may do its bookkeeping meanwhile
        host, w = pending.result()
        V = steps.vocab_size
        n_top = min(2 * K, width * V)
        weights.append(w)
        if w is not None:
            for i, b in enumerate(active):
                st = sent[b]
                counts = host[i][2 * n_top + width:]
                alive = [k for k in range(width) if scores_l[i][k] != NEG]
                computed = sum(counts[k] for k in alive)
                st.scores_computed += int(computed)
                st.hypothesis_steps += len(alive)
                st.window_per_step.append(computed / max(1, len(alive)))
        rows_all: list[int] = []
        toks_all: list[int] = []
        kept: list[int] = []  # positions in `active` of the sentences that go on
        new_scores_l: list[list[float]] = []
        for i, b in enumerate(active):
            st = sent[b]
            base = i * width
            rows: list[int] = []
            toks: list[int] = []
            scs: list[float] = []
            if t + 1 >= limits[b]:
                # length limit: every live hypothesis ends here with <eos>
                eos_lp = host[i][2 * n_top:2 * n_top + width]
                for k in range(width):
                    if scores_l[i][k] != NEG:
                        raw = scores_l[i][k] + eos_lp[k]
                        st.finished.append(_Finished(raw / (t + 1) if length_norm else raw, raw, t, base + k))
                st.done = True
            else:
                cand_scores, cand_idx = host[i][:n_top], host[i][n_top:2 * n_top]
                for rank in range(n_top):
                    sc = cand_scores[rank]
                    if sc == NEG or len(rows) == K:
                        break
                    idx = int(cand_idx[rank])
                    tok, row = idx % V, idx // V + base
                    if tok == EOS_ID:
                        if rank < K:
                            st.finished.append(_Finished(sc / (t + 1) if length_norm else sc, sc, t, row))
                        continue
                    rows.append(row)
                    toks.append(tok)
                    scs.append(sc)
                if not scs:
                    st.done = True
                elif len(st.finished) >= K:
                    best_done = max(f.score for f in st.finished)
                    # without length normalisation alive scores only fall: nothing can overtake
                    if length_norm or best_done >= max(scs):
                        st.done = True
            if st.done:
                continue
            pad = K - len(rows)
            kept.append(i)
            rows_all += rows + [base] * pad  # dead rows: any row of the sentence, score −inf
            toks_all += toks + [EOS_ID] * pad
            new_scores_l.append(scs + [NEG] * pad)
        backptrs.append(rows_all)
        chosen.append(toks_all)
        if not kept:
            break
        memory_rows = None
        if width != K or len(kept) < len(active):  # K copies of each remaining sentence's encoding
            memory_rows = [i * width for i in kept for _ in range(K)]
        steps.advance(rows_all, toks_all, [s for row in new_scores_l for s in row], memory_rows, len(kept), K)
        scores_l = new_scores_l
        active = [active[i] for i in kept]
        width = K

    host_weights = [None if w is None else w.float().cpu().numpy() for w in weights]
    return [_backtrack(sent[b], backptrs, chosen, host_weights) for b in range(B)]


def _backtrack(st: _SentenceState, backptrs: list[list[int]], chosen: list[list[int]], weights) -> Hypothesis:
    best = max(st.finished, key=lambda f: f.score) if st.finished else None
    if best is None:
        return Hypothesis([], float("-inf"), None, st.scores_computed, st.hypothesis_steps, st.window_per_step)
    tokens: list[int] = []
    attn: list[np.ndarray] = []
    # the finished hypothesis chose <eos> at step `best.step` from row `best.row`
    if weights[best.step] is not None:
        attn.append(weights[best.step][best.row])
    row = best.row
    for t in range(best.step - 1, -1, -1):
        tokens.append(chosen[t][row])
        if weights[t] is not None:
            attn.append(weights[t][backptrs[t][row]])
        row = backptrs[t][row]
    tokens.reverse()
    attn.reverse()
    return Hypothesis(tokens, best.score, np.stack(attn) if attn else None, st.scores_computed, st.hypothesis_steps,
                      st.window_per_step)
