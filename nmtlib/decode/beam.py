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
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch
from torch import Tensor

from nmtlib.data.batching import Batch
from nmtlib.data.vocab import BOS_ID, EOS_ID
from nmtlib.models.seq2seq import Seq2Seq


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
        return self.scores_computed / self.hypothesis_steps if self.hypothesis_steps else 0.0


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

    def start(self, batch: Batch, repeat: int):
        states = []
        for model in self.models:
            memory, state = model.encode(batch.src, batch.src_lengths)
            if repeat > 1:
                memory = memory.repeat_interleave(repeat)
                state = state.index_select(torch.arange(batch.src.shape[0], device=batch.src.device).repeat_interleave(repeat))
            states.append((memory, state))
        return states

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

    @staticmethod
    def reorder(states, index: Tensor):
        return [(memory, state.index_select(index)) for memory, state in states]


def max_lengths(src_lengths: Tensor, ratio: float) -> list[int]:
    return [int(math.ceil(ratio * int(n))) + 10 for n in src_lengths]


@torch.no_grad()
def greedy_search(ensemble: Ensemble, batch: Batch, max_len_ratio: float = 2.0) -> list[Hypothesis]:
    """Argmax decoding; the reference beam search must agree with it at beam size 1."""
    B = batch.src.shape[0]
    limits = max_lengths(batch.src_lengths, max_len_ratio)
    states = ensemble.start(batch, 1)
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
        host = torch.stack(cols, 1).tolist()
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


@torch.no_grad()
def beam_search(
    ensemble: Ensemble, batch: Batch, beam: int = 12, max_len_ratio: float = 2.0, length_norm: bool = False
) -> list[Hypothesis]:
    """Best hypothesis per sentence of ``batch`` (see the module docstring).

    The bookkeeping runs on host lists: each step moves the 2K best candidates per sentence to
    the host in one transfer and the next rows, tokens and scores back in one, instead of one
    tiny device operation per hypothesis (which dominated on GPUs)."""
    device = batch.src.device
    B, K = batch.src.shape[0], beam
    limits = max_lengths(batch.src_lengths, max_len_ratio)
    states = ensemble.start(batch, K)
    NEG = float("-inf")
    # only the first hypothesis of each sentence is alive at step 0
    scores_l = [[0.0] + [NEG] * (K - 1) for _ in range(B)]
    scores = torch.tensor(scores_l, device=device)
    y = torch.full((B * K,), BOS_ID, dtype=torch.long, device=device)
    backptrs: list[list[int]] = []  # per step: (B·K,) row of the previous step each row extends
    chosen: list[list[int]] = []  # per step: (B·K,) token each row chose
    weights: list[Tensor | None] = []  # per step: (B·K, S) attention of the step
    sent = [_SentenceState() for _ in range(B)]
    row_base = [b * K for b in range(B)]

    for t in range(max(limits)):
        lp, states, w, ev = ensemble.step(y, states)
        V = lp.shape[-1]
        if ev is not None:
            counts = ev.view(B, K).tolist()
            for b in range(B):
                st = sent[b]
                if not st.done:
                    alive = [k for k in range(K) if scores_l[b][k] != NEG]
                    computed = sum(counts[b][k] for k in alive)
                    st.scores_computed += int(computed)
                    st.hypothesis_steps += len(alive)
                    st.window_per_step.append(computed / max(1, len(alive)))
        total = (scores.unsqueeze(2) + lp.view(B, K, V)).view(B, K * V)
        top_scores, top_idx = total.topk(2 * K, dim=1)  # (B, 2K), sorted
        top = torch.cat([top_scores.double(), top_idx.double()], 1).tolist()  # one transfer
        weights.append(w)
        eos_lp = None
        rows_all: list[int] = []
        toks_all: list[int] = []
        new_scores_l: list[list[float]] = []
        for b in range(B):
            st = sent[b]
            rows: list[int] = []
            toks: list[int] = []
            scs: list[float] = []
            if not st.done:
                if t + 1 >= limits[b]:
                    # length limit: every live hypothesis ends here with <eos>
                    if eos_lp is None:
                        eos_lp = lp[:, EOS_ID].tolist()
                    for k in range(K):
                        if scores_l[b][k] != NEG:
                            raw = scores_l[b][k] + eos_lp[b * K + k]
                            st.finished.append(_Finished(raw / (t + 1) if length_norm else raw, raw, t, b * K + k))
                    st.done = True
                else:
                    cand_scores, cand_idx = top[b][: 2 * K], top[b][2 * K:]
                    for rank in range(2 * K):
                        sc = cand_scores[rank]
                        if sc == NEG or len(rows) == K:
                            break
                        idx = int(cand_idx[rank])
                        tok, row = idx % V, idx // V + row_base[b]
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
            pad = K - len(rows)
            rows_all += rows + [0] * pad
            toks_all += toks + [EOS_ID] * pad
            new_scores_l.append(scs + [NEG] * pad)
        backptrs.append(rows_all)
        chosen.append(toks_all)
        scores_l = new_scores_l
        if all(s.done for s in sent):
            break
        moved = torch.tensor([rows_all, toks_all], dtype=torch.long).to(device, non_blocking=True)
        scores = torch.tensor(scores_l, dtype=torch.float32).to(device, non_blocking=True)
        states = ensemble.reorder(states, moved[0])
        y = moved[1]

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
