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
    attn: list[list[np.ndarray]] = [[] for _ in range(B)]
    score = [0.0] * B
    computed = [0] * B
    per_step: list[list[float]] = [[] for _ in range(B)]
    done = [False] * B
    for t in range(max(limits)):
        lp, states, w, ev = ensemble.step(y, states)
        best = lp.argmax(-1)
        for b in range(B):
            if done[b]:
                continue
            tok = int(best[b]) if t + 1 < limits[b] else EOS_ID
            score[b] += float(lp[b, tok])
            if w is not None:
                attn[b].append(w[b].cpu().numpy())
                computed[b] += int(ev[b])
                per_step[b].append(float(ev[b]))
            if tok == EOS_ID:
                done[b] = True
            else:
                tokens[b].append(tok)
        if all(done):
            break
        y = best
    return [
        Hypothesis(tokens[b], score[b], np.stack(attn[b]) if attn[b] else None, computed[b],
                   len(tokens[b]) + 1 if w is not None else 0, per_step[b])
        for b in range(B)
    ]


@torch.no_grad()
def beam_search(
    ensemble: Ensemble, batch: Batch, beam: int = 12, max_len_ratio: float = 2.0, length_norm: bool = False
) -> list[Hypothesis]:
    """Best hypothesis per sentence of ``batch`` (see the module docstring)."""
    device = batch.src.device
    B, K = batch.src.shape[0], beam
    limits = max_lengths(batch.src_lengths, max_len_ratio)
    states = ensemble.start(batch, K)
    # only the first hypothesis of each sentence is alive at step 0
    scores = torch.full((B, K), float("-inf"), device=device)
    scores[:, 0] = 0.0
    y = torch.full((B * K,), BOS_ID, dtype=torch.long, device=device)
    backptrs: list[Tensor] = []  # per step: (B·K,) row of the previous step each row extends
    chosen: list[Tensor] = []  # per step: (B·K,) token each row chose
    weights: list[Tensor | None] = []  # per step: (B·K, S) attention of the step
    sent = [_SentenceState() for _ in range(B)]
    row_base = torch.arange(B, device=device).unsqueeze(1) * K

    for t in range(max(limits)):
        lp, states, w, ev = ensemble.step(y, states)
        V = lp.shape[-1]
        alive = torch.isfinite(scores)  # (B, K)
        if ev is not None:
            counts = (ev.view(B, K) * alive).sum(1).tolist()
            n_alive = alive.sum(1).tolist()
            for b in range(B):
                if not sent[b].done:
                    sent[b].scores_computed += int(counts[b])
                    sent[b].hypothesis_steps += int(n_alive[b])
                    sent[b].window_per_step.append(counts[b] / max(1, n_alive[b]))
        total = (scores.unsqueeze(2) + lp.view(B, K, V)).view(B, K * V)
        top_scores, top_idx = total.topk(2 * K, dim=1)  # (B, 2K), sorted
        top_rows = top_idx // V + row_base  # beam row each candidate extends
        top_tokens = top_idx % V
        weights.append(w)
        backptrs.append(torch.zeros(B * K, dtype=torch.long, device=device))
        chosen.append(torch.full((B * K,), EOS_ID, dtype=torch.long, device=device))

        top_scores_l, top_rows_l, top_tokens_l = top_scores.tolist(), top_rows.tolist(), top_tokens.tolist()
        scores_l = scores.tolist()
        new_scores = torch.full((B, K), float("-inf"), device=device)
        next_rows = torch.zeros(B, K, dtype=torch.long, device=device)
        next_tokens = torch.full((B, K), EOS_ID, dtype=torch.long, device=device)
        for b in range(B):
            st = sent[b]
            if st.done:
                continue
            if t + 1 >= limits[b]:
                # length limit: every live hypothesis ends here with <eos>
                for k in range(K):
                    if math.isfinite(scores_l[b][k]):
                        raw = scores_l[b][k] + float(lp[b * K + k, EOS_ID])
                        st.finished.append(_Finished(raw / (t + 1) if length_norm else raw, raw, t, b * K + k))
                st.done = True
                continue
            rows, toks, scs = [], [], []
            for rank in range(2 * K):
                s = top_scores_l[b][rank]
                if s == float("-inf") or len(rows) == K:
                    break
                tok, row = top_tokens_l[b][rank], top_rows_l[b][rank]
                if tok == EOS_ID:
                    if rank < K:
                        st.finished.append(_Finished(s / (t + 1) if length_norm else s, s, t, row))
                    continue
                rows.append(row)
                toks.append(tok)
                scs.append(s)
            for k in range(len(rows)):
                next_rows[b, k] = rows[k]
                next_tokens[b, k] = toks[k]
                new_scores[b, k] = scs[k]
            best_alive = max(scs) if scs else float("-inf")
            if not scs:
                st.done = True
            elif len(st.finished) >= K:
                best_done = max(f.score for f in st.finished)
                # without length normalisation alive scores only fall: nothing can overtake
                if length_norm or best_done >= best_alive:
                    st.done = True
        flat_rows = next_rows.view(-1)
        backptrs[-1] = flat_rows
        chosen[-1] = next_tokens.view(-1)
        scores = new_scores
        if all(s.done for s in sent):
            break
        states = ensemble.reorder(states, flat_rows)
        y = next_tokens.view(-1)

    return [_backtrack(sent[b], backptrs, chosen, weights, length_norm) for b in range(B)]


def _backtrack(st: _SentenceState, backptrs, chosen, weights, length_norm: bool) -> Hypothesis:
    best = max(st.finished, key=lambda f: f.score) if st.finished else None
    if best is None:
        return Hypothesis([], float("-inf"), None, st.scores_computed, st.hypothesis_steps, st.window_per_step)
    tokens: list[int] = []
    attn: list[np.ndarray] = []
    # the finished hypothesis chose <eos> at step `best.step` from row `best.row`
    if weights[best.step] is not None:
        attn.append(weights[best.step][best.row].cpu().numpy())
    row = best.row
    for t in range(best.step - 1, -1, -1):
        tokens.append(int(chosen[t][row]))
        if weights[t] is not None:
            attn.append(weights[t][int(backptrs[t][row])].cpu().numpy())
        row = int(backptrs[t][row])
    tokens.reverse()
    attn.reverse()
    return Hypothesis(tokens, best.score, np.stack(attn) if attn else None, st.scores_computed, st.hypothesis_steps,
                      st.window_per_step)
