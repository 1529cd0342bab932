"""Each attention equation on small hand-computable tensors (values, not only shapes)."""

from __future__ import annotations

import math
from dataclasses import replace

import pytest
import torch

from nmtlib.models.attention import (
    FlexibleAttention,
    GlobalAttention,
    LocalMonotonicAttention,
    LocalPredictiveAttention,
    Memory,
)
from nmtlib.models.scores import ConcatScore, DotScore, GeneralScore, LocationScore


def memory_of(values: torch.Tensor, lengths: list[int]) -> Memory:
    lengths_t = torch.tensor(lengths)
    mask = torch.arange(values.shape[1]).unsqueeze(0) < lengths_t.unsqueeze(1)
    return Memory(values, mask, lengths_t)


KEYS = torch.tensor([[[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])  # (1, 3, 2)
QUERY = torch.tensor([[1.0, 2.0]])
POS = torch.arange(3).unsqueeze(0)


def test_dot_score_is_inner_product():
    assert DotScore(2, 2)(QUERY, KEYS, POS).tolist() == [[1.0, 2.0, 3.0]]


def test_dot_score_rejects_unequal_sizes():
    with pytest.raises(ValueError, match="general"):
        DotScore(2, 4)


def test_general_score_is_bilinear():
    score = GeneralScore(2, 2)
    with torch.no_grad():
        score.W_a.weight.copy_(torch.tensor([[2.0, 0.0], [1.0, 3.0]]))
    keys = score.precompute(KEYS)  # W_a h̄_s
    # h_tᵀ W_a h̄_s: W_a h̄ = [2,1], [0,3], [2,4] → dotted with [1,2] → 4, 6, 10
    assert score(QUERY, keys, POS).tolist() == [[4.0, 6.0, 10.0]]


def test_concat_score_matches_formula():
    score = ConcatScore(2, 2, attention_size=2)
    with torch.no_grad():
        score.W_q.weight.copy_(torch.eye(2))
        score.U_a.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, -1.0]]))
        score.v_a.weight.copy_(torch.tensor([[1.0, 0.5]]))
    got = score(QUERY, score.precompute(KEYS), POS)[0]
    for s, (a, b) in enumerate(KEYS[0].tolist()):
        expected = math.tanh(1 + a) + 0.5 * math.tanh(2 - b)  # v_aᵀ tanh(W_q h_t + U_a h̄_s)
        assert got[s].item() == pytest.approx(expected, abs=1e-6)


def test_location_score_gathers_positions_and_ignores_past_max():
    score = LocationScore(2, 2, max_positions=2)
    with torch.no_grad():
        score.W_a.weight.copy_(torch.tensor([[1.0, 0.0], [0.0, 1.0]]))
        score.W_a.bias.zero_()
    got = score(QUERY, score.precompute(KEYS), POS)[0].tolist()
    assert got[:2] == [1.0, 2.0]
    assert got[2] == float("-inf")  # footnote 6: positions past L_max are ignored


def test_location_renormalises_over_sentence():
    score = LocationScore(2, 2, max_positions=5)
    att = GlobalAttention(score)
    with torch.no_grad():
        score.W_a.weight.zero_()
        score.W_a.bias.copy_(torch.tensor([0.0, 1.0, 2.0, 3.0, 4.0]))
    memory = att.precompute(memory_of(torch.randn(1, 3, 2), [2]))
    out, _ = att(QUERY, memory, {}, 0, torch.zeros(1, 2))
    e = [math.exp(0.0), math.exp(1.0)]
    assert out.weights[0].tolist() == pytest.approx([e[0] / sum(e), e[1] / sum(e), 0.0], abs=1e-6)


def test_global_attention_softmax_and_context():
    att = GlobalAttention(DotScore(2, 2))
    values = KEYS.clone()
    memory = att.precompute(memory_of(values, [3]))
    out, _ = att(QUERY, memory, {}, 0, torch.zeros(1, 2))
    e = torch.exp(torch.tensor([1.0, 2.0, 3.0]))
    expected = e / e.sum()
    assert torch.allclose(out.weights[0], expected)
    assert torch.allclose(out.context[0], (expected.unsqueeze(1) * values[0]).sum(0))
    assert out.evaluated.tolist() == [3]


def test_global_attention_masks_padding():
    att = GlobalAttention(DotScore(2, 2))
    memory = att.precompute(memory_of(KEYS.clone(), [2]))
    out, _ = att(QUERY, memory, {}, 0, torch.zeros(1, 2))
    assert out.weights[0, 2].item() == 0.0
    assert out.weights[0].sum().item() == pytest.approx(1.0)
    assert out.evaluated.tolist() == [2]


def test_local_m_window_is_clipped_at_sentence_edges():
    values = torch.randn(1, 6, 2)
    att = LocalMonotonicAttention(DotScore(2, 2), window=1)
    memory = att.precompute(memory_of(values, [4]))
    # step 0: window [−1, 1] ∩ [0, 3] = {0, 1}
    out, _ = att(QUERY, memory, {}, 0, torch.zeros(1, 2))
    assert (out.weights[0] > 0).tolist() == [True, True, False, False, False, False]
    assert out.evaluated.tolist() == [2]
    logits = (values[0, :2] @ QUERY[0])
    assert torch.allclose(out.weights[0, :2], torch.softmax(logits, 0))
    # step 2: window {1, 2, 3}
    out, _ = att(QUERY, memory, {}, 2, torch.zeros(1, 2))
    assert (out.weights[0] > 0).tolist() == [False, True, True, True, False, False]
    # past the end: p_t clamped to the last word, window {2, 3}
    out, _ = att(QUERY, memory, {}, 9, torch.zeros(1, 2))
    assert (out.weights[0] > 0).tolist() == [False, False, True, True, False, False]
    assert out.evaluated.tolist() == [2]


def test_local_p_is_windowed_softmax_times_gaussian_and_trains_p():
    torch.manual_seed(0)
    S, D = 8, 2
    values = torch.randn(1, S, 3)
    att = LocalPredictiveAttention(DotScore(3, 3), query_size=3, window=D)
    memory = att.precompute(memory_of(values, [S]))
    query = torch.randn(1, 3)
    out, _ = att(query, memory, {}, 0, torch.zeros(1, 3))
    p = att.aligned_position(query, memory.lengths)[0].item()  # Eq. 10, in [0, S]
    assert 0 <= p <= S
    window = [s for s in range(round(p) - D, round(p) + D + 1) if 1 <= s <= S]  # 1-based
    logits = torch.stack([values[0, s - 1] @ query[0] for s in window])
    align = torch.softmax(logits, 0)
    sigma = D / 2
    expected = torch.zeros(S)
    for k, s in enumerate(window):
        expected[s - 1] = align[k] * math.exp(-((s - p) ** 2) / (2 * sigma**2))  # Eq. 11
    assert torch.allclose(out.weights[0], expected, atol=1e-6)
    assert out.weights.sum().item() < 1.0  # the Gaussian factor: no longer a distribution
    out.context.sum().backward()
    assert att.W_p.weight.grad.abs().sum() > 0
    assert att.v_p.weight.grad.abs().sum() > 0


def flexible(sigma: float = 1.5) -> FlexibleAttention:
    torch.manual_seed(1)
    return FlexibleAttention(DotScore(4, 4), query_size=4, embedding_size=3, sigma=sigma)


def test_flexible_weights_sum_to_one_and_follow_equations():
    att = flexible()
    values = torch.randn(2, 7, 4)
    memory = att.precompute(memory_of(values, [7, 5]))
    state = {"focus": torch.tensor([2.0, 1.0])}
    query, emb = torch.randn(2, 4), torch.randn(2, 3)
    out, new = att(query, memory, state, 0, emb)
    assert torch.allclose(out.weights.sum(1), torch.ones(2), atol=1e-6)
    g = torch.sigmoid(att.v_g(torch.tanh(att.W_g(torch.cat([query, emb], 1))))).squeeze(1)  # Eq. 8
    for b, n in enumerate([7, 5]):
        s = torch.arange(n, dtype=torch.float)
        logits = values[b, :n] @ query[b] - g[b] * (s - state["focus"][b]) ** 2 / (2 * 1.5**2)  # Eq. 5–7
        assert torch.allclose(out.weights[b, :n], torch.softmax(logits, 0), atol=1e-6)
        assert new["focus"][b].item() == pytest.approx((out.weights[b, :n] * s).sum().item(), abs=1e-5)  # Eq. 4
    assert torch.allclose(out.gate, g)


def test_flexible_tau_infinity_is_exactly_untruncated():
    att = flexible()
    memory = att.precompute(memory_of(torch.randn(2, 9, 4), [9, 6]))
    state = {"focus": torch.tensor([4.0, 2.0])}
    query, emb = torch.randn(2, 4), torch.randn(2, 3)
    full, _ = att(query, memory, state, 0, emb)  # memory.tau None
    inf, _ = att(query, replace(memory, tau=float("inf")), state, 0, emb)
    assert torch.equal(full.weights, inf.weights) and torch.equal(full.context, inf.context)
    # a finite τ whose span covers every word computes the same numbers
    wide, _ = att(query, replace(memory, tau=1e6), state, 0, emb)
    assert torch.allclose(full.weights, wide.weights, atol=1e-6)
    assert wide.evaluated.tolist() == [9, 6]


def test_flexible_window_equals_closed_form_and_shrinks_with_tau():
    att = flexible()
    S = 30
    memory = att.precompute(memory_of(torch.randn(1, S, 4), [S]))
    state = {"focus": torch.tensor([12.3])}
    query, emb = torch.randn(1, 4), torch.randn(1, 3)
    g = att.strength(query, emb).item()
    counts = []
    for tau in (5.0, 1.6, 1.2, 0.8, 0.3):
        out, _ = att(query, replace(memory, tau=tau), state, 0, emb)
        r = 1.5 * math.sqrt(2 * tau / g)  # s ∈ (p − σ√(2τ/g), p + σ√(2τ/g))
        inside = [s for s in range(S) if 12.3 - r < s < 12.3 + r]
        assert out.evaluated.item() == len(inside)
        assert [s for s in range(S) if out.weights[0, s] > 0] == inside
        assert out.weights.sum().item() == pytest.approx(1.0, abs=1e-6)
        counts.append(out.evaluated.item())
    assert counts == sorted(counts, reverse=True) and counts[-1] < counts[0]


def test_flexible_truncation_really_scores_fewer_positions():
    """The score function sees the windows' (row, position) pairs only (flat layout), or the span
    that covers the windows (few rows), never all positions masked."""
    att = flexible()
    memory = replace(att.precompute(memory_of(torch.randn(2, 40, 4), [40, 30])), tau=0.5)
    seen = []
    att.score.register_forward_hook(lambda m, args, out: seen.append(tuple(out.shape)))
    state, query, emb = {"focus": torch.tensor([20.0, 3.0])}, torch.randn(2, 4), torch.randn(2, 3)
    att.flat_min_skipped = 0
    out, _ = att(query, memory, state, 0, emb)
    assert seen == [(int(out.evaluated.sum()), 1)] and seen[0][0] < 40
    seen.clear()
    att.flat_min_skipped = float("inf")
    out, _ = att(query, memory, state, 0, emb)
    assert len(seen) == 1 and seen[0][0] == 2 and seen[0][1] < 40


@pytest.mark.parametrize("score", [DotScore(4, 4), GeneralScore(4, 4), ConcatScore(4, 4, 5), LocationScore(4, 4, 6)])
def test_score_of_pairs_equals_the_batched_score(score):
    """Score.pairs (the flat layout of Flexible Attention's windows) gives the logits of forward."""
    torch.manual_seed(0)
    keys = score.precompute(torch.randn(3, 7, 4))
    query = torch.randn(3, 4)
    positions = torch.arange(7).expand(3, -1)
    full = score(query, keys, positions)  # (3, 7)
    rows, pos = torch.tensor([0, 0, 1, 2, 2, 2]), torch.tensor([0, 6, 3, 1, 2, 5])
    assert torch.allclose(score.pairs(query, keys, rows, pos), full[rows, pos], atol=1e-6)


def test_flexible_window_layouts_agree():
    """With τ, the flat layout (the windows' pairs) and the covering span (each row masked) give
    the same weights, context, focus and evaluation counts."""
    torch.manual_seed(2)
    att = FlexibleAttention(ConcatScore(4, 4, 6), query_size=4, embedding_size=3)
    memory = replace(att.precompute(memory_of(torch.randn(5, 20, 4), [20, 9, 14, 3, 20])), tau=1.2)
    state = {"focus": torch.tensor([0.0, 4.4, 12.5, 2.0, 18.9])}
    query, emb = torch.randn(5, 4), torch.randn(5, 3)
    outs = []
    for threshold in (0, float("inf")):  # flat always / span always
        att.flat_min_skipped = threshold
        outs.append(att(query, memory, state, 0, emb))
    (flat, f_state), (span, s_state) = outs
    assert torch.equal(flat.evaluated, span.evaluated) and torch.equal(flat.weights > 0, span.weights > 0)
    assert torch.allclose(flat.weights, span.weights, atol=1e-6)
    assert torch.allclose(flat.context, span.context, atol=1e-6)
    assert torch.allclose(f_state["focus"], s_state["focus"], atol=1e-5)
