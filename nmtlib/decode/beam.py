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
step, the top 2K expansions per sentence, packed for one transfer) sits behind the ``Steps`` of
:mod:`nmtlib.decode.steps`: :class:`~nmtlib.decode.steps.EagerSteps`, or
:class:`nmtlib.decode.graphs.GraphedSearch`'s CUDA-graph replays (``decode.cuda_graphs``).

With ``n_best`` > 1 a search also returns each sentence's next best finished hypotheses, best
first (OpenNMT-py's ``-n_best``, fairseq's ``--nbest``); the search itself is the same.

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
from typing import TypeVar

import numpy as np
import torch
from torch import Tensor

from nmtlib.config import DecodeConfig
from nmtlib.data.batching import Batch
from nmtlib.data.vocab import BOS_ID, EOS_ID
from nmtlib.decode.steps import CandidateRow, EagerSteps, Ensemble, PendingStep, StepSource
from nmtlib.metrics.window import sentence_window

T = TypeVar("T")
NEG = float("-inf")

#: a search as a generator: yields after launching each step's device work, returns its result
Search = Generator[None, None, T]


def run_to_end(search: Search[T]) -> T:
    """The result of ``search``, run without interruption."""
    while True:
        try:
            next(search)
        except StopIteration as stop:
            return stop.value


@dataclass
class Hypothesis:
    tokens: list[int]  #: output ids without <eos>
    score: float  #: log-probability (length-normalised if asked)
    attention: np.ndarray | None  #: (len(tokens)+1, S): weights of the step that predicted each token and <eos>
    scores_computed: int = 0  #: score evaluations summed over every hypothesis at every step
    hypothesis_steps: int = 0  #: number of (hypothesis, step) pairs those evaluations were spread over
    window_per_step: list[float] = field(default_factory=list)  #: mean evaluations per live hypothesis, per step
    #: the next best finished hypotheses of the same search, best first (``n_best`` > 1; their
    #: window fields are the search's, shared by all)
    alternatives: list[Hypothesis] = field(default_factory=list)

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


def max_lengths(src_lengths: Tensor, ratio: float) -> list[int]:
    return [int(math.ceil(ratio * int(n))) + 10 for n in src_lengths]


def greedy_search(ensemble: Ensemble, batch: Batch,
                  max_len_ratio: float = DecodeConfig.max_len_ratio) -> list[Hypothesis]:
    """Argmax decoding; the reference beam search must agree with it at beam size 1."""
    return run_to_end(greedy_search_steps(ensemble, batch, max_len_ratio))


@torch.no_grad()  # on a generator: no gradients while it runs, whoever resumes it
def greedy_search_steps(ensemble: Ensemble, batch: Batch,
                        max_len_ratio: float = DecodeConfig.max_len_ratio) -> Search[list[Hypothesis]]:
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


def beam_search(
    ensemble: Ensemble, batch: Batch, beam: int = DecodeConfig.beam, max_len_ratio: float = DecodeConfig.max_len_ratio,
    length_norm: bool = DecodeConfig.length_norm,
    graphs: StepSource | None = None, n_best: int = 1,
) -> list[Hypothesis]:
    """Best hypothesis per sentence of ``batch`` (see the module docstring and
    :func:`beam_search_steps`)."""
    return run_to_end(beam_search_steps(ensemble, batch, beam, max_len_ratio, length_norm, graphs, n_best=n_best))


@torch.no_grad()  # on a generator: no gradients while it runs, whoever resumes it
def beam_search_steps(
    ensemble: Ensemble, batch: Batch, beam: int = DecodeConfig.beam, max_len_ratio: float = DecodeConfig.max_len_ratio,
    length_norm: bool = DecodeConfig.length_norm,
    graphs: StepSource | None = None, lane: int = 0, n_best: int = 1,
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
    at the same time need different ``lane`` numbers: each lane has its own graphs' buffers.

    ``n_best``: also return the next ``n_best`` − 1 finished hypotheses of each sentence, best
    first, as the best one's ``alternatives`` (at most ``beam``; the search is the same)."""
    if not 1 <= n_best <= beam:
        raise ValueError(f"n-best {n_best}: must be between 1 and the beam size ({beam})")
    B, K = batch.src.shape[0], beam
    limits = max_lengths(batch.src_lengths, max_len_ratio)
    if graphs is not None and graphs.ensemble is not ensemble:
        raise ValueError("beam_search: `graphs` were made for another ensemble")
    steps = graphs.search(batch, lane) if graphs is not None else EagerSteps(ensemble, batch)
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
        layout = CandidateRow.of(K, width, V)
        weights.append(w)
        rows_all: list[int] = []
        toks_all: list[int] = []
        kept: list[int] = []  # positions in `active` of the sentences that go on
        new_scores_l: list[list[float]] = []
        for i, b in enumerate(active):
            st = sent[b]
            if w is not None:
                _count_evaluations(st, host[i][layout.evaluations], scores_l[i])
            base = i * width
            rows, toks, scs = _sentence_step(st, host[i], layout, scores_l[i], t, t + 1 >= limits[b], base, V, K,
                                             length_norm)
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
    return [_ranked(sent[b], backptrs, chosen, host_weights, n_best) for b in range(B)]


def _count_evaluations(st: _SentenceState, counts: list[float], scores: list[float]) -> None:
    """Add a step's score evaluations of a sentence's live rows (Shu & Nakayama's window)."""
    alive = [k for k in range(len(scores)) if scores[k] != NEG]
    computed = sum(counts[k] for k in alive)
    st.scores_computed += int(computed)
    st.hypothesis_steps += len(alive)
    st.window_per_step.append(computed / max(1, len(alive)))


def _sentence_step(
    st: _SentenceState, host: list[float], layout: CandidateRow, scores: list[float], t: int, at_limit: bool,
    base: int, V: int, K: int, length_norm: bool,
) -> tuple[list[int], list[int], list[float]]:
    """One sentence's decisions at step ``t`` from its host row of :func:`~nmtlib.decode.steps.candidates`
    (laid out as ``layout`` says): the hypotheses it finishes (into ``st.finished``), whether it is
    done, and the rows, tokens and scores of the (at most K) hypotheses it goes on with. ``base``:
    its first row in the step."""
    width = len(scores)
    rows: list[int] = []
    toks: list[int] = []
    scs: list[float] = []
    if at_limit:
        # length limit: every live hypothesis ends here with <eos>
        eos_lp = host[layout.eos]
        for k in range(width):
            if scores[k] != NEG:
                raw = scores[k] + eos_lp[k]
                st.finished.append(_Finished(raw / (t + 1) if length_norm else raw, raw, t, base + k))
        st.done = True
        return rows, toks, scs
    cand_scores, cand_idx = host[layout.scores], host[layout.indices]
    for rank in range(layout.n):
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
    return rows, toks, scs


def _ranked(st: _SentenceState, backptrs: list[list[int]], chosen: list[list[int]], weights,
            n_best: int) -> Hypothesis:
    """The best finished hypothesis, with the next ``n_best`` − 1 as its ``alternatives``."""
    if not st.finished:
        return Hypothesis([], float("-inf"), None, st.scores_computed, st.hypothesis_steps, st.window_per_step)
    # a stable sort: of equal scores, the first finished ranks first (what max() picks)
    best, *others = sorted(st.finished, key=lambda f: f.score, reverse=True)[:n_best]
    hyp = _backtrack(st, best, backptrs, chosen, weights)
    hyp.alternatives = [_backtrack(st, f, backptrs, chosen, weights) for f in others]
    return hyp


def _backtrack(st: _SentenceState, best: _Finished, backptrs: list[list[int]], chosen: list[list[int]],
               weights) -> Hypothesis:
    """The hypothesis that finished as ``best``: its tokens and attention, from the backpointers."""
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
