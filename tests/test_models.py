"""Model-level behaviour of every architecture: padding invariance, Bahdanau's previous-state
query, invalid combinations rejected, and that each variant learns."""

from __future__ import annotations

import pytest
import torch

from nmtlib.config import ConfigError, resolve_variant
from nmtlib.data.batching import ParallelData, collate
from nmtlib.data.vocab import Vocabulary
from nmtlib.models.builder import build_model

from conftest import ALL_VARIANTS


def model_for(name: str, src_vocab: int = 40, tgt_vocab: int = 50, seed: int = 0):
    torch.manual_seed(seed)
    return build_model(resolve_variant(name, ALL_VARIANTS[name]).model, src_vocab, tgt_vocab).eval()


@pytest.mark.parametrize("name", sorted(ALL_VARIANTS))
def test_padded_batch_equals_each_sentence_alone(name):
    model = model_for(name)
    torch.manual_seed(1)
    lengths = [7, 3, 5]
    src = torch.zeros(3, 7, dtype=torch.long)
    for i, n in enumerate(lengths):
        src[i, :n] = torch.randint(4, 40, (n,))
    tgt = torch.randint(4, 50, (3, 6))
    with torch.no_grad():
        batch = model(src, torch.tensor(lengths), tgt, keep_attention=True)
        for i, n in enumerate(lengths):
            alone = model(src[i : i + 1, :n], torch.tensor([n]), tgt[i : i + 1], keep_attention=True)
            assert torch.allclose(batch.logits[i], alone.logits[0], atol=1e-5), name
            if alone.attention is not None:
                assert torch.allclose(batch.attention[i, :, :n], alone.attention[0], atol=1e-5)
                assert batch.attention[i, :, n:].abs().sum() == 0


@pytest.mark.parametrize("name", sorted(ALL_VARIANTS))
def test_outputs_do_not_depend_on_later_target_words(name):
    """Teacher forcing must be causal: logits of step t see y_0..y_t only."""
    model = model_for(name)
    src, lengths = torch.randint(4, 40, (2, 6)), torch.tensor([6, 4])
    tgt = torch.randint(4, 50, (2, 7))
    changed = tgt.clone()
    changed[:, 4:] = (changed[:, 4:] + 7) % 46 + 4
    with torch.no_grad():
        a, b = model(src, lengths, tgt).logits, model(src, lengths, changed).logits
    assert torch.equal(a[:, :4], b[:, :4])
    assert not torch.allclose(a[:, 4:], b[:, 4:])


def test_bahdanau_attention_is_queried_with_previous_state():
    model = model_for("rnnsearch")
    src, lengths = torch.randint(4, 40, (2, 5)), torch.tensor([5, 5])
    memory, state = model.encode(src, lengths)
    queries = []
    model.decoder.attention.register_forward_hook(lambda m, args, out: queries.append(args[0].clone()))
    y = torch.full((2,), 2)
    _, state1, _ = model.decoder.step(y, state, memory)
    _, state2, _ = model.decoder.step(y, state1, memory)
    # step 1 attends with s_0 = tanh(W_s ←h_1), step 2 with s_1: always the state before the step
    assert torch.allclose(queries[0], state.h[-1]) and torch.allclose(queries[1], state1.h[-1])
    enc = model.encoder(src, lengths)
    assert torch.allclose(state.h[-1], torch.tanh(model.decoder.W_s(enc.backward_first)))


def test_luong_attention_is_queried_with_current_state():
    model = model_for("global-general-feed")
    src, lengths = torch.randint(4, 40, (2, 5)), torch.tensor([5, 4])
    memory, state = model.encode(src, lengths)
    queries = []
    model.decoder.attention.register_forward_hook(lambda m, args, out: queries.append(args[0].clone()))
    _, new_state, _ = model.decoder.step(torch.full((2,), 2), state, memory)
    assert torch.allclose(queries[0], new_state.h[-1])


def test_reversed_source_keeps_states_in_source_order():
    model = model_for("base-reverse-dropout")
    src = torch.tensor([[5, 6, 7, 0], [8, 9, 0, 0]])
    enc = model.encoder(src, torch.tensor([3, 2]))
    # reading backwards, the state at the first word has seen the whole sentence: it equals the final state
    assert torch.allclose(enc.states[0, 0], enc.final_h[-1, 0]) and torch.allclose(enc.states[1, 0], enc.final_h[-1, 1])
    assert enc.states[1, 2:].abs().sum() == 0


@pytest.mark.parametrize("options, key, reason", [
    (dict(attention="local-p", score="location"), "score", "global attention only"),
    (dict(attention="local-m", score="location"), "score", "global attention only"),
    (dict(attention="none", input_feed=False, window=5), "window", "attention is 'none'"),
    (dict(attention="global", window=5), "window", "'local-m' / 'local-p'"),
    (dict(attention="global", sigma=2.0), "sigma", "flexible"),
    (dict(attention="none"), "input_feed", "without attention"),
    (dict(arch="rnnsearch", input_feed=True), "input_feed", "query 'previous'"),
    (dict(arch="shu", score="dot"), "score", "equal encoder and decoder state sizes"),
    (dict(attention="global", train={"beta": 0.1}), "train.beta", "flexible"),
    (dict(attention="global", decode={"taus": [1.2]}), "decode.taus", "flexible"),
    (dict(attention="global", scroe="dot"), "unknown option", "valid options"),
    (dict(attention="sideways"), "attention", "not one of"),
])
def test_invalid_combinations_are_rejected_with_reason(options, key, reason):
    with pytest.raises(ConfigError) as err:
        resolve_variant("v", options)
    assert key in str(err.value) and reason in str(err.value)


# Each variant learns: the 64 shortest sentence pairs of the embedded corpus (~430 target
# tokens), Adam lr 0.02, full-batch steps; a few seconds per variant on one CPU thread.
LEARN_STEPS = 150
LEARN_THRESHOLD = 3.0  # mean per-token NLL; an untrained model starts near ln(|V|) ≈ 6.5


@pytest.mark.parametrize("name", sorted(ALL_VARIANTS))
def test_each_variant_learns(name, tiny_corpus):
    from nmtlib.train.loss import batch_loss

    sv, tv = Vocabulary.load(tiny_corpus / "vocab.src"), Vocabulary.load(tiny_corpus / "vocab.tgt")
    data = ParallelData.load(tiny_corpus / "train.src", tiny_corpus / "train.tgt", sv, tv)
    batch = collate(data, sorted(range(len(data)), key=lambda i: (len(data.tgt[i]), i))[:64])
    torch.manual_seed(0)
    options = {k: v for k, v in ALL_VARIANTS[name].items() if k != "dropout"}
    model = build_model(resolve_variant(name, options).model, len(sv), len(tv))
    opt = torch.optim.Adam(model.parameters(), lr=0.02)
    first = None
    for _ in range(LEARN_STEPS):
        _, nll = batch_loss(model, batch)
        loss = nll / batch.target_tokens
        first = first if first is not None else loss.item()
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 5.0)
        opt.step()
    assert loss.item() < LEARN_THRESHOLD < first, f"{name}: {first:.2f} → {loss.item():.2f}"


@pytest.mark.parametrize("rnn", ["lstm", "gru"])
@pytest.mark.parametrize("layers", [1, 3])
def test_stacked_cells_step_equals_the_rnn_module(rnn, layers):
    """The decoder's per-layer cells compute exactly what its nn.LSTM / nn.GRU module would,
    with layer 0's embedding part of the input given as precomputed gates."""
    from nmtlib.models.cells import StackedCells
    from nmtlib.models.encoders import RNNS

    torch.manual_seed(0)
    E, R, H, B = 6, 5, 8, 4
    module = RNNS[rnn](E + R, H, num_layers=layers, batch_first=True)
    cells = StackedCells(module, split=E)
    emb, rest = torch.randn(B, E), torch.randn(B, R)
    h0 = torch.randn(layers, B, H)
    c0 = torch.randn(layers, B, H) if rnn == "lstm" else None
    out, hidden = module(torch.cat([emb, rest], 1).unsqueeze(1), (h0, c0) if c0 is not None else h0)
    top, h, c = cells(cells.embedding_gates(emb), rest, h0, c0, 0.0, False)
    assert torch.allclose(top, out[:, 0], atol=1e-6)
    assert torch.allclose(h, hidden[0] if c0 is not None else hidden, atol=1e-6)
    if c0 is not None:
        assert torch.allclose(c, hidden[1], atol=1e-6)
    # gradients reach the module's own parameters
    (top.sum() + h.sum()).backward()
    assert all(p.grad is not None and p.grad.abs().sum() > 0 for p in module.parameters())


def test_logits_at_positions_are_the_full_logits_there():
    """Training projects only real target positions onto the vocabulary; those rows must be the
    rows of the full (B, T, V) projection, in row-major order."""
    model = model_for("global-general-feed")
    src, lengths = torch.randint(4, 40, (3, 6)), torch.tensor([6, 4, 2])
    tgt = torch.randint(4, 50, (3, 5))
    real = torch.tensor([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 1, 1, 0, 0]], dtype=torch.bool)
    with torch.no_grad():
        full = model(src, lengths, tgt).logits
        some = model(src, lengths, tgt, positions=real).logits
    assert some.shape == (int(real.sum()), 50)
    assert torch.allclose(some, full[real], atol=1e-6)


@pytest.mark.parametrize("rnn", ["lstm", "gru"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("layers", [1, 3])
def test_encoder_cells_equal_the_packed_module(rnn, bidirectional, layers):
    """Training on CPU runs the encoder as per-step cells; states, final states and every
    gradient must be those of the module over a PackedSequence (the eval path)."""
    from nmtlib.models.encoders import RecurrentEncoder

    torch.manual_seed(0)
    enc = RecurrentEncoder(30, 6, 8, layers=layers, rnn=rnn, bidirectional=bidirectional, reverse=not bidirectional)
    src = torch.randint(4, 30, (5, 7))
    lengths = torch.tensor([3, 7, 1, 7, 5])
    src[torch.arange(7).unsqueeze(0) >= lengths.unsqueeze(1)] = 0

    out_cells = enc(src, lengths)  # grad enabled on CPU: the cells path
    loss = out_cells.states.pow(2).sum() + out_cells.final_h.pow(3).sum()
    if out_cells.final_c is not None:
        loss = loss + out_cells.final_c.sum()
    if out_cells.backward_first is not None:
        loss = loss + out_cells.backward_first.sum()
    loss.backward()
    grads_cells = {n: p.grad.clone() for n, p in enc.named_parameters()}
    enc.zero_grad()

    # reference: nn.LSTM/GRU over the packed batch, differentiated the same way
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence
    from nmtlib.models.encoders import reverse_padded

    s = reverse_padded(src, lengths) if enc.reverse else src
    packed = pack_padded_sequence(enc.embedding(s), lengths, batch_first=True, enforce_sorted=False)
    out, hidden = enc.rnn(packed)
    states, _ = pad_packed_sequence(out, batch_first=True, total_length=7)
    if enc.reverse:
        states = reverse_padded(states, lengths)
    h, c = hidden if isinstance(hidden, tuple) else (hidden, None)
    ref_back = h[-1] if bidirectional else None
    if bidirectional:
        h, c = h[0::2], (None if c is None else c[0::2])
    assert torch.allclose(out_cells.states, states, atol=1e-6)
    assert torch.allclose(out_cells.final_h, h, atol=1e-6)
    if c is not None:
        assert torch.allclose(out_cells.final_c, c, atol=1e-6)
    if ref_back is not None:
        assert torch.allclose(out_cells.backward_first, ref_back, atol=1e-6)
    ref = states.pow(2).sum() + h.pow(3).sum() + (c.sum() if c is not None else 0) + (
        ref_back.sum() if ref_back is not None else 0)
    ref.backward()
    for n, p in enc.named_parameters():
        assert torch.allclose(grads_cells[n], p.grad, atol=1e-5), n


@pytest.mark.parametrize("rnn", ["lstm", "gru"])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_encoder_packing_is_torchs_own_without_its_syncs(rnn, bidirectional):
    """The eval/GPU path sorts and unsorts on the host itself (no host sync); its states and final
    states must be bit-identical to ``pack_padded_sequence(enforce_sorted=False)``'s, ties in
    length included."""
    from torch.nn.utils.rnn import pack_padded_sequence, pad_packed_sequence

    from nmtlib.models.encoders import RecurrentEncoder

    torch.manual_seed(0)
    enc = RecurrentEncoder(30, 6, 8, layers=2, rnn=rnn, bidirectional=bidirectional).eval()
    src = torch.randint(4, 30, (6, 7))
    lengths = torch.tensor([3, 7, 1, 7, 5, 3])
    with torch.no_grad():
        out = enc(src, lengths)
        packed = pack_padded_sequence(enc.embedding(src), lengths, batch_first=True, enforce_sorted=False)
        ref, hidden = enc.rnn(packed)
        states, _ = pad_packed_sequence(ref, batch_first=True, total_length=7)
    h, c = hidden if isinstance(hidden, tuple) else (hidden, None)
    assert torch.equal(out.states, states)
    assert torch.equal(out.final_h, h[0::2] if bidirectional else h)
    if c is not None:
        assert torch.equal(out.final_c, c[0::2] if bidirectional else c)


def test_attention_matvec_products_and_their_gradients():
    """dot_scores and weighted_sum (CPU backward passes of their own) against torch.bmm, and
    their gradients by finite differences."""
    from nmtlib.models.matvec import dot_scores, weighted_sum

    torch.manual_seed(0)
    keys = torch.randn(3, 5, 4, dtype=torch.double, requires_grad=True)
    query = torch.randn(3, 4, dtype=torch.double, requires_grad=True)
    weights = torch.randn(3, 5, dtype=torch.double, requires_grad=True)
    assert torch.allclose(dot_scores(keys, query), torch.bmm(keys, query.unsqueeze(2)).squeeze(2))
    assert torch.allclose(weighted_sum(weights, keys), torch.bmm(weights.unsqueeze(1), keys).squeeze(1))
    assert torch.autograd.gradcheck(dot_scores, (keys, query))
    assert torch.autograd.gradcheck(weighted_sum, (weights, keys))
    # one input without gradient: the other's gradient is still right
    frozen = keys.detach()
    assert torch.autograd.gradcheck(lambda q: dot_scores(frozen, q), (query,))
    assert torch.autograd.gradcheck(lambda w: weighted_sum(w, frozen), (weights,))
