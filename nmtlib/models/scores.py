"""Alignment score functions: Luong et al. 2015 Eq. 8–9, Bahdanau et al. 2015 Eq. 7.

A score function maps one query vector per batch row and the keys of a set of source
positions to one logit per position. Mechanisms (``attention.py``) decide *which* positions are
scored (all of them, a window, a thresholded span) and turn logits into weights; the score
function never sees that choice, so every score works with every mechanism that makes sense.

Keys are computed once per source sentence by :meth:`Score.precompute` (``W_a h̄_s`` for
``general``, ``U_a h_j`` for ``concat``/``additive``), the trick Bahdanau et al. use so that the
per-step cost is only the query side. Mechanisms gather rows of those keys for windowed scoring.
"""

from __future__ import annotations

import torch
from torch import Tensor, nn

from nmtlib.models.matvec import dot_scores
from nmtlib.precision import float32


class Score(nn.Module):
    """Base class. Subclasses implement :meth:`precompute` and :meth:`forward`."""

    #: True for functions of the source *content*; False for ``location`` (footnote 14 of
    #: Luong et al.: the weights then belong to the predicted word, not the input word)
    content_based: bool = True

    def precompute(self, memory: Tensor) -> Tensor:
        """Per-sentence keys ``(B, S, K)`` from encoder states ``memory`` ``(B, S, H_m)``."""
        return memory

    def forward(self, query: Tensor, keys: Tensor, positions: Tensor) -> Tensor:
        """Logits ``(B, W)`` of ``query`` ``(B, H_q)`` against ``keys`` ``(B, W, K)``.

        ``positions`` ``(B, W)`` holds the 0-based source position of each key row; only
        position-based scores use it.
        """
        raise NotImplementedError

    def pairs(self, query: Tensor, keys: Tensor, rows: Tensor, positions: Tensor) -> Tensor:
        """Logits ``(N,)`` of N (row, position) pairs: ``query[rows[i]]`` against
        ``keys[rows[i], positions[i]]``. Windows of different widths and places, laid flat this
        way, cost only their own pairs (Flexible Attention with τ)."""
        return self(query.index_select(0, rows), pair_keys(keys, rows, positions).unsqueeze(1),
                    positions.unsqueeze(1)).squeeze(1)


def pair_keys(keys: Tensor, rows: Tensor, positions: Tensor) -> Tensor:
    """Rows ``keys[rows, positions]`` of ``keys`` ``(B, S, K)``, copied whole by one
    ``index_select`` on the flattened (B·S, K) matrix; ``rows`` and ``positions`` broadcast, and
    the result has their shape plus K."""
    B, S, K = keys.shape
    flat = rows * S + positions
    return keys.reshape(B * S, K).index_select(0, flat.reshape(-1)).view(*flat.shape, K)


class DotScore(Score):
    """``dot``: score(h_t, h̄_s) = h_tᵀ h̄_s (Luong Eq. 8, first line)."""

    def __init__(self, query_size: int, memory_size: int) -> None:
        super().__init__()
        if query_size != memory_size:
            raise ValueError(
                f"score 'dot' needs equal decoder and encoder state sizes, got {query_size} and "
                f"{memory_size}; use 'general' or 'concat' instead"
            )

    def forward(self, query: Tensor, keys: Tensor, positions: Tensor) -> Tensor:
        return dot_scores(keys, query)


class GeneralScore(Score):
    """``general``: score(h_t, h̄_s) = h_tᵀ W_a h̄_s (Luong Eq. 8, second line).

    ``W_a h̄_s`` is precomputed per sentence, so a step costs one dot product per position.
    """

    def __init__(self, query_size: int, memory_size: int) -> None:
        super().__init__()
        self.W_a = nn.Linear(memory_size, query_size, bias=False)

    def precompute(self, memory: Tensor) -> Tensor:
        return self.W_a(memory)

    def forward(self, query: Tensor, keys: Tensor, positions: Tensor) -> Tensor:
        return dot_scores(keys, query)


class ConcatScore(Score):
    """``concat`` / ``additive``: v_aᵀ tanh(W_a [h_t; h̄_s]) (Luong Eq. 8, third line).

    Splitting ``W_a = [W_q, U_a]`` gives Bahdanau's Eq. 7, e_ij = v_aᵀ tanh(W_a s_{i−1} + U_a h_j),
    exactly; the two names differ only in which decoder state the mechanism passes as query
    (``query: previous`` for RNNsearch and Shu & Nakayama). ``U_a h̄_s`` is precomputed.
    """

    def __init__(self, query_size: int, memory_size: int, attention_size: int | None = None) -> None:
        super().__init__()
        attention_size = attention_size or query_size
        self.W_q = nn.Linear(query_size, attention_size, bias=False)
        self.U_a = nn.Linear(memory_size, attention_size, bias=False)
        self.v_a = nn.Linear(attention_size, 1, bias=False)

    def precompute(self, memory: Tensor) -> Tensor:
        return self.U_a(memory)

    def forward(self, query: Tensor, keys: Tensor, positions: Tensor) -> Tensor:
        return self.v_a(torch.tanh(keys + self.W_q(query).unsqueeze(1))).squeeze(2)

    def pairs(self, query: Tensor, keys: Tensor, rows: Tensor, positions: Tensor) -> Tensor:
        # W_q h_t once per row, not once per pair
        return self.v_a(torch.tanh(pair_keys(keys, rows, positions) + self.W_q(query).index_select(0, rows))).squeeze(1)


class LocationScore(Score):
    """``location``: a_t = softmax(W_a h_t) over fixed positions 1..L_max (Luong Eq. 9).

    The logits of the positions asked for are gathered from the fixed-length vector; positions
    at or past ``max_positions`` get −inf, i.e. are ignored (footnote 6). The mechanism's softmax
    over the sentence's positions then renormalises over the top S entries *(choice, as noted in
    docs/MODELS.md)*.
    """

    content_based = False

    def __init__(self, query_size: int, memory_size: int, max_positions: int = 100) -> None:
        super().__init__()
        self.max_positions = max_positions
        self.W_a = nn.Linear(query_size, max_positions)

    def precompute(self, memory: Tensor) -> Tensor:
        # no keys: the score depends on the query and the position only
        return memory.new_zeros(memory.shape[0], memory.shape[1], 0)

    @float32  # logits over positions (nmtlib.precision)
    def forward(self, query: Tensor, keys: Tensor, positions: Tensor) -> Tensor:
        logits = self.W_a(query)  # (B, L_max)
        inside = positions < self.max_positions
        gathered = logits.gather(1, positions.clamp(max=self.max_positions - 1))
        return gathered.masked_fill(~inside, float("-inf"))


#: score names → classes; schema enums and CLI choices are derived from this table
SCORES: dict[str, type[Score]] = {
    "dot": DotScore,
    "general": GeneralScore,
    "concat": ConcatScore,
    "additive": ConcatScore,
    "location": LocationScore,
}


def build_score(name: str, query_size: int, memory_size: int, **options: int) -> Score:
    try:
        cls = SCORES[name]
    except KeyError:
        raise ValueError(f"unknown score {name!r}; choose one of {sorted(SCORES)}") from None
    return cls(query_size, memory_size, **options)
