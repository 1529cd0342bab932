"""Beam search through the graphed-step machinery (:mod:`nmtlib.decode.graphs`).

On CPU the machinery runs without recording (``record=False``): the functions a CUDA graph
records, on the same static buffers, eagerly. That path must give the eager search's results
exactly: tokens, scores, attention and score evaluations. The recorded graphs themselves are
checked against the eager search in ``tests/test_cuda.py``.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from nmtlib.config import resolve_variant
from nmtlib.data.batching import ParallelData, collate
from nmtlib.decode.beam import beam_search
from nmtlib.decode.steps import EagerSteps, Ensemble
from nmtlib.decode.graphs import GraphedSteps
from nmtlib.models.builder import build_model

from conftest import ALL_VARIANTS


def model_of(name: str, seed: int = 0, device: str = "cpu"):
    torch.manual_seed(seed)
    spec = {**ALL_VARIANTS[name], "dropout": 0.0}
    return build_model(resolve_variant(name, spec).model, 40, 50).to(device).eval()


def sentences(n: int, seed: int = 1) -> ParallelData:
    g = torch.Generator().manual_seed(seed)
    src = [torch.randint(4, 40, (int(torch.randint(2, 13, (1,), generator=g)),), generator=g).tolist() for _ in range(n)]
    return ParallelData(src, None)


def assert_same(a, b, exact: bool = True) -> None:
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.tokens == y.tokens
        assert (x.score == y.score) if exact else x.score == pytest.approx(y.score, abs=1e-4)
        assert (x.attention is None) == (y.attention is None)
        if x.attention is not None:
            assert (np.array_equal(x.attention, y.attention) if exact
                    else np.allclose(x.attention, y.attention, atol=1e-5))
        assert (x.scores_computed, x.hypothesis_steps) == (y.scores_computed, y.hypothesis_steps)


@pytest.mark.parametrize("name", ["global-general-feed", "global-location-feed", "local-m-general-feed",
                                  "local-p-general-feed", "rnnsearch", "shu-flexible", "base"])
def test_static_buffer_steps_give_the_eager_search(name):
    """Sentences of different lengths finish at different steps, so the batch shrinks and the
    states move between slots of different shapes; a second batch reuses the slots."""
    model = model_of(name)
    ensemble = Ensemble([model])
    data = sentences(9)
    graphs = GraphedSteps(ensemble, record=False)
    assert graphs.supported
    for idx in ([0, 1, 2, 3, 4, 5], [6], [7, 8, 0]):
        batch = collate(data, idx)
        eager = beam_search(ensemble, batch, beam=4, max_len_ratio=1.0)
        graphed = beam_search(ensemble, batch, beam=4, max_len_ratio=1.0, graphs=graphs)
        assert_same(eager, graphed)
    assert len(graphs.slots) > 3


def test_static_buffer_steps_of_an_ensemble_give_the_eager_search():
    ensemble = Ensemble([model_of("global-general-feed", 0), model_of("global-general-feed", 1)])
    batch = collate(sentences(5), list(range(5)))
    graphs = GraphedSteps(ensemble, record=False)
    assert_same(beam_search(ensemble, batch, beam=3), beam_search(ensemble, batch, beam=3, graphs=graphs))


def test_slots_are_bounded_least_recently_used_first_out():
    ensemble = Ensemble([model_of("global-general-feed")])
    graphs = GraphedSteps(ensemble, record=False, max_shapes=2)
    data = sentences(6)
    for i in range(6):
        beam_search(ensemble, collate(data, [i]), beam=2, max_len_ratio=1.0, graphs=graphs)
    assert len(graphs.slots) == 2
    last_length = len(data.src[5])
    assert all(key[3] == last_length for key in graphs.slots)  # the last sentence's two shapes (1 and 2 rows)


def test_flexible_attention_with_a_threshold_is_searched_eagerly():
    """τ bounds the windows on the host: such a step cannot be recorded."""
    model = model_of("shu-flexible")
    graphs = GraphedSteps(Ensemble([model], tau=1.2), record=False)
    assert not graphs.supported
    assert type(graphs.search(collate(sentences(2), [0, 1]))) is EagerSteps
    assert GraphedSteps(Ensemble([model], tau=None), record=False).supported


def test_local_m_steps_are_specific_to_their_step_index():
    ensemble = Ensemble([model_of("local-m-general-feed"), model_of("global-general-feed")])
    assert ensemble.graph_key(3) == ((3,), ())
    assert Ensemble([model_of("global-general-feed")]).graph_key(3) == ((),)


def test_flexible_window_bounds_on_the_device_equal_the_hosts():
    """``FlexibleAttention.window_on_device`` (GPUs) computes :meth:`window`'s bounds (CPUs)
    bit for bit, and the masked score over the whole source gives the windowed weights, focus
    and counts of the host path."""
    from nmtlib.models.attention import FlexibleAttention, Memory, length_mask
    from nmtlib.models.scores import ConcatScore

    torch.manual_seed(0)
    att = FlexibleAttention(ConcatScore(16, 16, 16), query_size=16, embedding_size=8).eval()
    g = torch.Generator().manual_seed(5)
    B = 400
    lengths = torch.randint(1, 40, (B,), generator=g)
    focus = torch.rand(B, generator=g) * (lengths + 3) - 1.5
    focus[:40] = torch.round(focus[:40]) + 0.5  # halves: round half to even on both sides
    gate = torch.rand(B, generator=g).clamp(min=1e-4)
    for tau in (0.05, 1.2, 7.0):
        lo, hi = att.window(focus, gate, lengths, tau)
        lo_d, hi_d = att.window_on_device(focus, gate, lengths, tau)
        assert np.array_equal(lo, lo_d.numpy()) and np.array_equal(hi, hi_d.numpy())

    S = 12
    lengths = torch.tensor([12, 7, 12, 3, 9])
    values, query, emb = torch.randn(5, S, 16), torch.randn(5, 16), torch.randn(5, 8)
    memory = att.precompute(Memory(values, length_mask(lengths, S), lengths, tau=1.2))
    state = {"focus": torch.tensor([0.0, 2.5, 6.2, 1.0, 11.7])}
    outs = []
    for host in (True, False):
        att.host_bounds = host
        with torch.no_grad():
            out, new = att(query, memory, state, 3, emb)
        outs.append((out, new["focus"]))
    (a, fa), (b, fb) = outs
    assert torch.equal(a.evaluated, b.evaluated) and torch.equal(a.weights > 0, b.weights > 0)
    assert torch.allclose(a.weights, b.weights, atol=1e-6) and torch.allclose(a.context, b.context, atol=1e-6)
    assert torch.allclose(fa, fb, atol=1e-5)
    assert att.graph_key(0, 1.2) == () and (setattr(att, "host_bounds", None) or att.graph_key(0, 1.2) is None)
    assert att.graph_key(0, None) == ()


def test_flexible_attention_with_device_bounds_is_graphed_and_gives_the_host_search():
    model = model_of("shu-flexible")
    ensemble = Ensemble([model], tau=1.2)
    batch = collate(sentences(6), list(range(6)))
    host = beam_search(ensemble, batch, beam=4)
    model.decoder.attention.host_bounds = False
    graphs = GraphedSteps(ensemble, record=False)
    assert graphs.supported
    assert_same(host, beam_search(ensemble, batch, beam=4, graphs=graphs), exact=False)
