"""Attention mechanisms: global, local-m, local-p (Luong et al. 2015 §3.1–3.2) and Flexible
Attention (Shu & Nakayama 2017 §3).

Every mechanism plugs a :class:`~nmtlib.models.scores.Score` into the same interface and
returns an :class:`AttentionOutput` with the context vector, the weights over *all* source
positions (zeros where nothing was computed: for AER, heatmaps and unk replacement) and the
number of score evaluations per row — the quantity Shu & Nakayama report as the window size.

Windowed mechanisms really skip work. Local attention gathers the keys inside each row's window
(width W ≤ 2D+1) and scores only those. Flexible Attention with a threshold τ scores only the
(row, position) pairs inside the rows' windows, laid flat, with a softmax per row; where that
would skip nothing (one row) it scores the covering span (benchmarks/RESULTS.md, tables 5c–5e
trace the layouts tried). On a CPU, weights are never obtained by masking a computation over
the whole source; on a GPU, Flexible Attention's τ window is such a mask, because skipping saves
no time there and bounding the window on the host costs a sync per step (see its docstring).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from torch import Tensor, nn

from nmtlib.config import ModelConfig
from nmtlib.models.matvec import weighted_sum
from nmtlib.models.scores import Score, pair_keys
from nmtlib.precision import float32

NEG_INF = float("-inf")


@dataclass
class Memory:
    """Encoder states of a batch, with what every decoder step needs about them."""

    values: Tensor  #: (B, S, H_m) source annotations h̄_s, in original source order
    mask: Tensor  #: (B, S) True at real tokens
    lengths: Tensor  #: (B,) source lengths
    keys: Tensor | None = None  #: (B, S, K) score keys, precomputed once per sentence
    #: the search's threshold τ on the attention's penalty (Shu & Nakayama §3.3): a mechanism
    #: with a penalty scores only where it is below τ; None (training, τ = ∞) scores everything
    tau: float | None = None

    def index_select(self, rows: Tensor) -> Memory:
        """Rows ``rows`` of every field (beam search: the hypotheses of the sentences still decoded)."""
        sel = lambda t: None if t is None else t.index_select(0, rows)  # noqa: E731
        return Memory(sel(self.values), sel(self.mask), sel(self.lengths), sel(self.keys), self.tau)


def windowed(tau: float | None) -> bool:
    """Whether a threshold τ truncates the scores; τ = ∞ (or None) scores every position."""
    return tau is not None and not math.isinf(tau)


class AttentionOutput(NamedTuple):
    context: Tensor  #: (B, H_m) c_t = Σ_s a_t(s) h̄_s
    weights: Tensor  #: (B, S) a_t over all source positions, 0 where not computed
    evaluated: Tensor  #: (B,) number of positions whose score was computed
    gate: Tensor | None = None  #: (B,) Flexible Attention strength g(t), else None


def length_mask(lengths: Tensor, width: int) -> Tensor:
    """(B, width) True at the first ``lengths[b]`` positions of each row."""
    return torch.arange(width, device=lengths.device).unsqueeze(0) < lengths.unsqueeze(1)


def masked_softmax(logits: Tensor, valid: Tensor) -> Tensor:
    """Softmax over the last dim with invalid entries at exactly zero (Luong Eq. 7).

    In float32 whatever the logits' precision: the weights place positions (Flexible Attention's
    focus, Eq. 4, is their mean), and CUDA's autocast computes softmax in float32 too."""
    return torch.softmax(logits.float().masked_fill(~valid, NEG_INF), dim=-1)


def gather_rows(x: Tensor, positions: Tensor) -> Tensor:
    """``x`` ``(B, S, D)`` gathered at ``positions`` ``(B, W)`` → ``(B, W, D)``.

    Whole rows are copied (:func:`~nmtlib.models.scores.pair_keys`): a ``gather`` with a
    (B, W, D) index reads the index once per element and was a fifth of the decode time of
    Flexible Attention on CPU (benchmarks/RESULTS.md, hotspot F)."""
    return pair_keys(x, torch.arange(x.shape[0], device=positions.device).unsqueeze(1), positions)


class Attention(nn.Module):
    """Base class: a score function plus the choice of positions it is evaluated at."""

    #: name used in configs and in results tables (declared in :data:`nmtlib.registry.MECHANISMS`)
    name: str = ""
    #: whether :class:`AttentionOutput` carries a strength g(t) (read by the β objective)
    gated: bool = False

    def __init__(self, score: Score) -> None:
        super().__init__()
        self.score = score

    @classmethod
    def from_config(cls, score: Score, cfg: ModelConfig) -> Attention:
        """The mechanism for a model configuration, around its score function."""
        return cls(score)

    def precompute(self, memory: Memory) -> Memory:
        return replace(memory, keys=self.score.precompute(memory.values))

    def init_state(self, memory: Memory) -> dict[str, Tensor]:
        """Per-row recurrent state of the mechanism (e.g. Flexible Attention's p_{t−1})."""
        return {}

    def graph_key(self, step: int, tau: float | None = None) -> tuple | None:
        """What a CUDA graph of decoder step ``step`` with threshold ``tau`` (:attr:`Memory.tau`)
        must be specific to: ``()`` when the step's operations do not depend on it, None when
        they cannot be recorded (they read values on the host). See :mod:`nmtlib.decode.graphs`."""
        return ()

    def forward(
        self, query: Tensor, memory: Memory, state: dict[str, Tensor], step: int, embedded: Tensor
    ) -> tuple[AttentionOutput, dict[str, Tensor]]:
        """One decoder step. ``query`` (B, H_q); ``embedded`` (B, E) is the feedback word's embedding."""
        raise NotImplementedError

    def _score_window(
        self, query: Tensor, memory: Memory, positions: Tensor, valid: Tensor, bias: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """Softmax weights ``(B, W)`` over ``positions`` (``(B, W)``, clamped into the sentence)
        computed from gathered keys only; ``bias`` is added to the logits (the penalty)."""
        positions = positions.clamp(min=0, max=memory.values.shape[1] - 1)
        logits = self.score(query, gather_rows(memory.keys, positions), positions)
        if bias is not None:
            logits = logits + bias
        return masked_softmax(logits, valid), positions

    def _attend_span(
        self, query: Tensor, memory: Memory, first: int, last: int, valid: Tensor, bias: Tensor | None = None
    ) -> tuple[Tensor, Tensor]:
        """Context (B, H_m) and weights (B, last − first + 1) over source positions first..last,
        scored in place (views of the keys and values, no gather); ``valid`` (B, ·) masks each
        row, ``bias`` (B, ·) is added to the logits."""
        span = torch.arange(first, last + 1, device=query.device).expand(query.shape[0], -1)
        logits = self.score(query, memory.keys[:, first:last + 1], span)
        if bias is not None:
            logits = logits + bias
        weights = masked_softmax(logits, valid)
        return weighted_sum(weights, memory.values[:, first:last + 1]), weights

    @staticmethod
    def _scatter(weights_w: Tensor, positions: Tensor, valid: Tensor, memory: Memory) -> AttentionOutput:
        """Context from window weights, and the weights spread over all source positions."""
        weights_w = weights_w * valid
        context = weighted_sum(weights_w, gather_rows(memory.values, positions))
        full = weights_w.new_zeros(memory.mask.shape).scatter_add(1, positions, weights_w)
        return AttentionOutput(context, full, valid.sum(1))


class GlobalAttention(Attention):
    """``global``: all source positions (Luong Eq. 7; Bahdanau Eq. 5–6 with ``additive``)."""

    name = "global"

    def forward(self, query, memory, state, step, embedded):
        context, weights = self._attend_span(query, memory, 0, memory.mask.shape[1] - 1, memory.mask)
        return AttentionOutput(context, weights, memory.lengths.clone()), state


class LocalMonotonicAttention(Attention):
    """``local-m``: p_t = t, softmax of Eq. 7 over [p_t − D, p_t + D] ∩ the sentence (footnote 8).

    Past the end of the source, p_t is clamped to the last word *(choice: the window would
    otherwise be empty)*.
    """

    name = "local-m"

    def __init__(self, score: Score, window: int = 10) -> None:
        super().__init__(score)
        self.D = window

    @classmethod
    def from_config(cls, score, cfg):
        return cls(score, window=cfg.window)

    def graph_key(self, step, tau=None):
        return (step,)  # p_t = t is a constant of the recorded step

    def forward(self, query, memory, state, step, embedded):
        center = torch.clamp(memory.lengths - 1, max=step)  # (B,) 0-based p_t = t
        offsets = torch.arange(-self.D, self.D + 1, device=query.device)
        positions = center.unsqueeze(1) + offsets
        valid = (positions >= 0) & (positions < memory.lengths.unsqueeze(1))
        weights, positions = self._score_window(query, memory, positions, valid)
        return self._scatter(weights, positions, valid, memory), state


class LocalPredictiveAttention(Attention):
    """``local-p``: p_t = S · sigmoid(v_pᵀ tanh(W_p h_t)) (Eq. 10) and
    a_t(s) = align(h_t, h̄_s) · exp(−(s − p_t)² / 2σ²), σ = D/2 (Eq. 11).

    Positions are 1-based as in the paper, s ∈ [round(p_t) − D, round(p_t) + D] ∩ [1, S]. The
    Gaussian multiplies the windowed softmax, so the weights need not sum to 1; it is the only
    path from the loss to p_t, hence to W_p and v_p.
    """

    name = "local-p"

    def __init__(self, score: Score, query_size: int, window: int = 10, predict_size: int | None = None) -> None:
        super().__init__(score)
        self.D = window
        self.sigma = window / 2
        self.W_p = nn.Linear(query_size, predict_size or query_size, bias=False)
        self.v_p = nn.Linear(predict_size or query_size, 1, bias=False)

    @classmethod
    def from_config(cls, score, cfg):
        return cls(score, cfg.hidden_size, window=cfg.window)

    @float32
    def aligned_position(self, query: Tensor, lengths: Tensor) -> Tensor:
        """p_t of Eq. 10, real-valued in [0, S] (float32 under autocast: :mod:`nmtlib.precision`)."""
        return lengths.to(query.dtype) * torch.sigmoid(self.v_p(torch.tanh(self.W_p(query)))).squeeze(1)

    @float32
    def gaussian(self, s: Tensor, p: Tensor) -> Tensor:
        """exp(−(s − p_t)² / 2σ²) of Eq. 11 at 1-based positions ``s`` (B, W), p_t (B,); float32."""
        return torch.exp(-((s.to(p.dtype) - p.unsqueeze(1)) ** 2) / (2 * self.sigma**2))

    def forward(self, query, memory, state, step, embedded):
        p = self.aligned_position(query, memory.lengths)
        offsets = torch.arange(-self.D, self.D + 1, device=query.device)
        s = torch.round(p).long().detach().unsqueeze(1) + offsets  # 1-based window positions
        valid = (s >= 1) & (s <= memory.lengths.unsqueeze(1))
        align, positions = self._score_window(query, memory, s - 1, valid)
        return self._scatter(align * self.gaussian(s, p), positions, valid, memory), state


class FlexibleAttention(Attention):
    """Flexible Attention (Shu & Nakayama 2017).

    - focus p_t = Σ_s a_t(s) · s (Eq. 4), 0-based positions, p_0 = 0 *(choice: the first word)*;
    - strength g(t) = sigmoid(v_gᵀ tanh(W_g [h_{t−1}; i_t]) + b_g) (Eq. 8), from the query and the
      embedding of the feedback word;
    - a_t(s) = softmax_s(score(h_{t−1}, h̄_s) − g(t)(s − p_{t−1})² / 2σ²) (Eq. 5–7);
    - with a threshold τ (decoding, :attr:`Memory.tau`), scores are computed only where the
      penalty is below τ, s ∈ (p_{t−1} − σ√(2τ/g(t)), p_{t−1} + σ√(2τ/g(t))) (§3.3); τ = None
      (∞) scores all.

    Where the window's bounds are computed (``host_bounds``; None: on the host on a CPU, on the
    device elsewhere). On the host, only the window's pairs are scored. On a GPU that saves no
    time, and moving (p, g) to the host costs a sync per step (13–66% slower than τ = ∞ on an
    H100, benchmarks/RESULTS.md, G3): there the same bounds are computed on the device and the
    window masks a score over the whole source, so a step needs no sync and can be recorded in
    a CUDA graph. The weights and the evaluation counts (the window sizes) are the same.
    """

    name = "flexible"
    gated = True

    #: With τ, the windows' pairs are scored laid flat when that skips at least this many key
    #: elements of the covering span (rows × span width − window sizes, times the key size), else
    #: the span is scored with each row masked. Timed in interleaved rounds (benchmarks/RESULTS.md,
    #: table 5e), the flat layout was never slower where it skips anything, and 20% faster at
    #: beam 12 × batch 64; with one row it would skip nothing and only add operations.
    flat_min_skipped: float = 1

    def __init__(
        self, score: Score, query_size: int, embedding_size: int, sigma: float = 1.5, gate_size: int | None = None
    ) -> None:
        super().__init__(score)
        self.sigma = sigma
        self.host_bounds: bool | None = None  # None: on the host on a CPU only (see the class docstring)
        gate_size = gate_size or query_size
        self.W_g = nn.Linear(query_size + embedding_size, gate_size, bias=False)
        self.v_g = nn.Linear(gate_size, 1)  # its bias is b_g

    @classmethod
    def from_config(cls, score, cfg):
        return cls(score, cfg.hidden_size, cfg.embedding_size, sigma=cfg.sigma)

    def init_state(self, memory):
        # a position: float32 even where the encoder's states are bf16 (autocast)
        dtype = torch.promote_types(memory.values.dtype, torch.float32)
        return {"focus": memory.values.new_zeros(memory.values.shape[0], dtype=dtype)}

    def uses_host_bounds(self, device: torch.device) -> bool:
        """Whether a step with a finite τ computes its window's bounds on the host."""
        return device.type == "cpu" if self.host_bounds is None else self.host_bounds

    def graph_key(self, step, tau=None):
        # with τ and host bounds, the window's bounds are read on the host at every step
        return None if windowed(tau) and self.uses_host_bounds(self.v_g.weight.device) else ()

    @float32
    def strength(self, query: Tensor, embedded: Tensor) -> Tensor:
        """g(t) of Eq. 8, shape (B,); float32 under autocast (:mod:`nmtlib.precision`)."""
        return torch.sigmoid(self.v_g(torch.tanh(self.W_g(torch.cat([query, embedded], 1))))).squeeze(1)

    def window(self, focus: Tensor, gate: Tensor, lengths: Tensor, tau: float) -> tuple[np.ndarray, np.ndarray]:
        """Integer bounds [lo, hi] of the open span (p − r, p + r), r = σ√(2τ/g), in the sentence.

        An empty span (no integer within r of p, or p outside the sentence) becomes the word
        nearest to p. Taking the min/max with that word does it without a branch: a non-empty
        span always contains the integer nearest to p, since it is the closest integer of all.

        Computed on the host in float32 with NumPy, from one transfer of (p, g, length) per row:
        the search needs the span's ends on the host anyway, and as about 25 tensor operations on
        a few rows the bounds cost more dispatch time than the scores they save (benchmarks/
        RESULTS.md, table 5e)."""
        if focus.device.type == "cpu":  # views, no copies
            f, g = focus.detach().float().numpy(), gate.detach().float().numpy()
            n = lengths.numpy().astype(np.float32)
        else:
            f, g, n = torch.stack([focus.detach().float(), gate.detach().float(), lengths.to(torch.float32)]).cpu().numpy()
        last = n - 1
        radius = np.float32(self.sigma) * np.sqrt(np.float32(2 * tau) / g)
        nearest = np.minimum(np.maximum(np.rint(f), 0), last)  # rint rounds half to even, as torch.round
        lo = np.minimum(np.maximum(np.floor(f - radius) + 1, 0), nearest)
        hi = np.maximum(np.minimum(np.ceil(f + radius) - 1, last), nearest)
        return lo.astype(np.int64), hi.astype(np.int64)

    def window_on_device(self, focus: Tensor, gate: Tensor, lengths: Tensor, tau: float) -> tuple[Tensor, Tensor]:
        """:meth:`window`'s bounds as (B,) int64 tensors, computed where the rows are, with the
        same float32 operations (IEEE division and square root, floor, ceil, round half to even)."""
        f, g, last = focus.detach().float(), gate.detach().float(), lengths.to(torch.float32) - 1
        # a true division, as NumPy's: `scalar / g` is g.reciprocal() * scalar
        radius = torch.sqrt(torch.full_like(g, 2 * tau) / g) * self.sigma
        nearest = torch.minimum(torch.round(f).clamp(min=0), last)
        lo = torch.minimum((torch.floor(f - radius) + 1).clamp(min=0), nearest)
        hi = torch.maximum(torch.minimum(torch.ceil(f + radius) - 1, last), nearest)
        return lo.long(), hi.long()

    @float32
    def penalty(self, gate: Tensor, focus: Tensor, positions: Tensor) -> Tensor:
        """g(t)(s − p_{t−1})² / 2σ² (Eq. 5–6), broadcast over its arguments; float32."""
        return gate * (positions - focus) ** 2 / (2 * self.sigma**2)

    def forward(self, query, memory, state, step, embedded):
        focus = state["focus"]
        gate = self.strength(query, embedded)
        S = memory.mask.shape[1]
        if not windowed(memory.tau) or not self.uses_host_bounds(query.device):
            # every position is scored: τ = ∞ (training), or the τ window as a mask over the
            # whole source, with no sync (on a GPU; see the class docstring)
            first, last = 0, S - 1
            positions = torch.arange(S, device=query.device, dtype=focus.dtype)
            if windowed(memory.tau):
                lo, hi = self.window_on_device(focus, gate, memory.lengths, memory.tau)
                valid = (positions >= lo.unsqueeze(1)) & (positions <= hi.unsqueeze(1))
                evaluated = hi - lo + 1
            else:
                valid, evaluated = memory.mask, memory.lengths.clone()
            context, weights = self._attend_span(query, memory, 0, S - 1, valid,
                                                 bias=-self.penalty(gate.unsqueeze(1), focus.unsqueeze(1), positions))
        else:
            # Only the pairs (row, s) inside each row's window are scored, or the span that covers
            # them (flat_min_skipped); a row's evaluations are its window's size (Shu & Nakayama's
            # count). The weights are laid out over the covering span [first, last], zero outside
            # each row's own window.
            lo, hi = self.window(focus, gate, memory.lengths, memory.tau)
            first, last = int(lo.min()), int(hi.max())
            positions = torch.arange(first, last + 1, device=query.device, dtype=focus.dtype)
            counts = hi - lo + 1
            skipped = (len(lo) * (last - first + 1) - int(counts.sum())) * memory.keys.shape[-1]
            if skipped >= self.flat_min_skipped:
                weights = self._window_weights(query, memory, focus, gate, lo, hi, first, last)
                context = weighted_sum(weights, memory.values[:, first:last + 1])
            else:  # one row, or windows that coincide: score the covering span, each row masked
                span = np.arange(first, last + 1)
                valid = torch.from_numpy((span >= lo[:, None]) & (span <= hi[:, None])).to(query.device)
                bias = -self.penalty(gate.unsqueeze(1), focus.unsqueeze(1), positions)
                context, weights = self._attend_span(query, memory, first, last, valid, bias)
            evaluated = torch.from_numpy(counts).to(query.device)
        full = weights if (first, last) == (0, S - 1) else F.pad(weights, (first, S - 1 - last))
        new_focus = (weights * positions).sum(1)  # Eq. 4
        return AttentionOutput(context, full, evaluated, gate), {"focus": new_focus}

    def _window_weights(
        self, query: Tensor, memory: Memory, focus: Tensor, gate: Tensor, lo: np.ndarray, hi: np.ndarray,
        first: int, last: int,
    ) -> Tensor:
        """a_t of Eq. 5–7 over each row's window [lo, hi] as a (B, last − first + 1) matrix, zero
        outside the window. The windows' (row, position) pairs are laid flat and scored once each,
        with a softmax per row; scoring the covering span instead saved nothing in batches of many
        sentences, whose windows sit in different places (benchmarks/RESULTS.md, table 5e)."""
        B, W = len(lo), last - first + 1
        counts = hi - lo + 1
        rows = np.repeat(np.arange(B), counts)
        pos = np.arange(rows.size) - np.repeat(np.cumsum(counts) - counts - lo, counts)
        rows_t, pos_t = torch.from_numpy(rows).to(query.device), torch.from_numpy(pos).to(query.device)
        logits = self.score.pairs(query, memory.keys, rows_t, pos_t) - self.penalty(
            gate.index_select(0, rows_t), focus.index_select(0, rows_t), pos_t.to(focus.dtype))
        top = logits.new_full((B,), NEG_INF).scatter_reduce(0, rows_t, logits, "amax")
        e = torch.exp(logits - top.index_select(0, rows_t))
        w = e / logits.new_zeros(B).index_add(0, rows_t, e).index_select(0, rows_t)
        return logits.new_zeros(B * W).index_put((rows_t * W + pos_t - first,), w).view(B, W)
