"""CUDA paths: the decoder's per-layer cells and the CUDA-graph training loss.

The CUDA tests run only where a GPU is visible (the GPU machines of `benchmarks/RESULTS.md`); on
CPU-only machines, CI included, they are skipped. The first test checks on CPU that the graphed
callable computes the model's own forward pass, so CI covers the code the graphs record.
"""

from __future__ import annotations

import pytest
import torch

from nmtlib.config import resolve_variant
from nmtlib.data.batching import ParallelData, collate
from nmtlib.models.builder import build_model
from nmtlib.train.loss import batch_loss

from conftest import ALL_VARIANTS

needs_cuda = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")

GRAPHABLE = ["global-general-feed", "base-reverse-dropout", "rnnsearch", "local-p-general-feed", "shu-flexible"]


def _model(name: str, dropout: float = 0.0, device: str = "cuda"):
    torch.manual_seed(0)
    spec = {**ALL_VARIANTS[name], "dropout": dropout}
    return build_model(resolve_variant(name, spec).model, 40, 50).to(device).train()


@pytest.mark.parametrize("name", GRAPHABLE)
def test_graphed_callable_computes_the_model_forward_on_cpu(name):
    """The function the CUDA graphs record (the decoder loop with its parameters passed as
    arguments) gives the model's own logits and gradients."""
    from nmtlib.train.graphs import _DecoderLoop, _Functional, graph_inputs

    model = _model(name, device="cpu")
    g = torch.Generator().manual_seed(3)
    src = [torch.randint(4, 40, (n,), generator=g).tolist() for n in (5, 3, 7)]
    tgt = [torch.randint(4, 50, (n,), generator=g).tolist() for n in (4, 6, 2)]
    batch = collate(ParallelData(src, tgt), [0, 1, 2])
    args, (has_c, has_backward) = graph_inputs(model, batch, 8, 8)
    fn = _Functional(_DecoderLoop(model, (has_c, has_backward, False)), len(args))
    assert not any(n.startswith(("decoder.embedding.", "decoder.generator.")) for n in fn.names)
    logits = model.decoder.generator(fn(*args, *fn.params())[0])
    ref = model(batch.src, batch.src_lengths, batch.tgt_in).logits
    T = ref.shape[1]
    assert torch.allclose(logits[:, :T], ref, atol=1e-5)
    logits[:, :T].sum().backward()
    assert all(p.grad is not None for n, p in model.named_parameters() if n in fn.names)


def _batch(n: int = 8, seed: int = 1):
    g = torch.Generator().manual_seed(seed)
    src = [torch.randint(4, 40, (int(torch.randint(2, 13, (1,), generator=g)),), generator=g).tolist() for _ in range(n)]
    tgt = [torch.randint(4, 50, (int(torch.randint(1, 11, (1,), generator=g)),), generator=g).tolist() for _ in range(n)]
    return collate(ParallelData(src, tgt), list(range(n))).to(torch.device("cuda"))


def _grads(model):
    return {k: p.grad.detach().clone() for k, p in model.named_parameters() if p.grad is not None}


@needs_cuda
@pytest.mark.parametrize("name", GRAPHABLE)
def test_cuda_step_equals_cpu(name):
    model = _model(name).eval()
    batch = _batch()
    cpu = build_model(resolve_variant(name, {**ALL_VARIANTS[name], "dropout": 0.0}).model, 40, 50).eval()
    cpu.load_state_dict({k: v.cpu() for k, v in model.state_dict().items()})
    with torch.no_grad():
        a = model(batch.src, batch.src_lengths, batch.tgt_in).logits.cpu()
        b = cpu(batch.src.cpu(), batch.src_lengths, batch.tgt_in.cpu()).logits
    assert torch.allclose(a, b, atol=1e-4), (a - b).abs().max()


@needs_cuda
@pytest.mark.parametrize("name", GRAPHABLE)
def test_graphed_loss_and_gradients_equal_eager(name):
    from nmtlib.train.graphs import CudaGraphLoss

    model = _model(name)
    beta = 0.1 if name == "shu-flexible" else 0.0
    graphed = CudaGraphLoss(model, batch_size=8, bucket=8)
    for seed in (1, 2, 1):  # a new shape, another shape, then a replay of the first graph
        batch = _batch(seed=seed)
        model.zero_grad(set_to_none=True)
        obj, nll = batch_loss(model, batch, beta)
        obj.backward()
        eager = _grads(model)
        model.zero_grad(set_to_none=True)
        obj_g, nll_g = graphed(model, batch, beta)
        obj_g.backward()
        replayed = _grads(model)
        assert torch.allclose(obj, obj_g, rtol=1e-5, atol=1e-4) and torch.allclose(nll, nll_g, rtol=1e-5, atol=1e-4)
        assert eager.keys() == replayed.keys()
        for k in eager:
            assert torch.allclose(eager[k], replayed[k], rtol=1e-4, atol=1e-5), (name, k)
    assert graphed.eager_batches == 0 and 1 <= len(graphed.graphs) <= 2


@needs_cuda
def test_graph_replays_draw_new_dropout_masks():
    from nmtlib.train.graphs import CudaGraphLoss

    model = _model("global-general-feed", dropout=0.3)
    graphed = CudaGraphLoss(model, batch_size=8)
    batch = _batch()
    losses = {float(graphed(model, batch)[0]) for _ in range(4)}
    assert len(losses) == 4


@needs_cuda
def test_other_batch_sizes_run_eagerly():
    from nmtlib.train.graphs import CudaGraphLoss

    model = _model("global-general-feed")
    graphed = CudaGraphLoss(model, batch_size=16)
    obj, _ = graphed(model, _batch(n=8))
    obj.backward()
    assert graphed.eager_batches == 1 and not graphed.graphs


@needs_cuda
def test_flexible_tau_window_on_cuda_equals_cpu():
    """With τ the window's bounds are computed on the host on a CPU (``FlexibleAttention.window``)
    and on the device on a GPU (``window_on_device``, a mask over the whole source): the same rows
    give the same windows, weights and focus on both devices."""
    from nmtlib.models.attention import FlexibleAttention, Memory, length_mask
    from nmtlib.models.scores import ConcatScore

    torch.manual_seed(0)
    att = FlexibleAttention(ConcatScore(16, 16, 16), query_size=16, embedding_size=8).eval()
    lengths = torch.tensor([12, 7, 12, 3, 9])
    values, query, emb = torch.randn(5, 12, 16), torch.randn(5, 16), torch.randn(5, 8)
    focus = torch.tensor([0.0, 2.5, 6.2, 1.0, 11.7])
    outs = []
    for device in ("cpu", "cuda"):
        a = att.to(device)
        memory = a.precompute(Memory(values.to(device), length_mask(lengths.to(device), 12), lengths.to(device),
                                     tau=1.2))
        with torch.no_grad():
            out, state = a(query.to(device), memory, {"focus": focus.to(device)}, 3, emb.to(device))
        outs.append((out.evaluated.cpu(), out.weights.cpu(), state["focus"].cpu()))
    (ev_c, w_c, f_c), (ev_g, w_g, f_g) = outs
    assert torch.equal(ev_c, ev_g) and torch.equal(w_c > 0, w_g > 0)
    assert torch.allclose(w_c, w_g, atol=1e-5) and torch.allclose(f_c, f_g, atol=1e-4)


@needs_cuda
@pytest.mark.parametrize("graphs", [False, True])
def test_a_training_step_is_queued_without_host_syncs(graphs):
    """What lets the host prepare the next step while the GPU runs this one: no operation of
    ``update`` (encoder packing, loss, backward, clipping, optimiser) nor the loss reader's copy
    waits for the GPU. ``set_sync_debug_mode("error")`` raises on any synchronising call."""
    from nmtlib.train.graphs import CudaGraphLoss
    from nmtlib.train.loss import batch_loss
    from nmtlib.train.step import LossReader, update

    model = _model("global-general-feed")
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    loss_fn = CudaGraphLoss(model, batch_size=8) if graphs else batch_loss
    batch = _batch()
    update(model, optimizer, batch, loss_fn, 5.0, "sentences")  # records the graph: capture syncs
    reader = LossReader(torch.device("cuda"))
    torch.cuda.synchronize()
    torch.cuda.set_sync_debug_mode("error")
    try:
        loss, nll = update(model, optimizer, batch, loss_fn, 5.0, "sentences")
        reader.push(1, loss, nll, batch.target_tokens)
    finally:
        torch.cuda.set_sync_debug_mode(0)
    assert reader.lag == 1 and reader.pop() == []
    (done,) = reader.pop(0)
    assert done.loss == pytest.approx(float(loss)) and done.nll == pytest.approx(float(nll))


@needs_cuda
def test_trainer_on_cuda_reads_losses_late_and_still_stops_a_divergence(tiny_corpus, tmp_path):
    import math

    from nmtlib.train.trainer import Trainer, TrainingError

    from conftest import restored_torch_switches, tiny_train_paths

    train = {"device": "cuda", "cuda_graphs": True, "batch_size": 16, "epochs": 2, "max_steps": 12,
             "checkpoint_every": 5, "optimizer": "sgd", "lr": 0.5}
    spec = {"embedding_size": 16, "hidden_size": 16, "layers": 1, "attention": "global", "score": "general",
            "train": train}
    with restored_torch_switches():
        trainer = Trainer(resolve_variant("g", spec), tiny_train_paths(tiny_corpus, tmp_path / "ok"), progress=False)
        assert trainer.run()["step"] >= 0
        log = (tmp_path / "ok" / "train_log.csv").read_text().splitlines()
        assert len(log) >= 2 and all(math.isfinite(float(row.split(",")[3])) for row in log[1:])
        diverging = {**spec, "train": {**train, "lr": 1e38, "clip": 1e38, "init_range": 0.1}}
        trainer = Trainer(resolve_variant("g", diverging), tiny_train_paths(tiny_corpus, tmp_path / "nan"),
                          progress=False)
        with pytest.raises(TrainingError, match="before that step's weights were saved"):
            trainer.run()
    last = tmp_path / "nan" / "checkpoints" / "last.pt"
    if last.exists():
        from nmtlib import checkpoint

        state = checkpoint.load(last)
        assert all(torch.isfinite(v).all() for v in state["model"].values() if v.is_floating_point())


@needs_cuda
@pytest.mark.parametrize("name", [*GRAPHABLE, "local-m-general-feed", "global-location-feed"])
def test_graphed_beam_search_equals_eager(name):
    """Beam search replaying recorded steps (decode.cuda_graphs) finds the eager search's
    hypotheses, as batches shrink and shapes change, and replays most steps."""
    from nmtlib.decode.beam import beam_search
    from nmtlib.decode.steps import Ensemble
    from nmtlib.decode.graphs import GraphedSteps

    from test_decode_graphs import assert_same, model_of, sentences

    ensemble = Ensemble([model_of(name, device="cuda")])
    data = sentences(9)
    graphs = GraphedSteps(ensemble)
    # sentence 6 three times: local-m's steps are recorded per step index, at their second use
    for idx in ([0, 1, 2, 3, 4, 5], [6], [7, 8, 0], [6], [6]):
        batch = collate(data, idx).to(torch.device("cuda"))
        eager = beam_search(ensemble, batch, beam=4, max_len_ratio=1.0)
        graphed = beam_search(ensemble, batch, beam=4, max_len_ratio=1.0, graphs=graphs)
        assert_same(eager, graphed, exact=False)
    assert graphs.recorded > 0 and graphs.replayed > 0


@needs_cuda
def test_graphed_decoding_of_a_file_equals_eager():
    """``decode_data`` with ``cuda_graphs``: the same translations at batch 1 and 5, Flexible
    Attention with τ included (its window's bounds are computed on the device there)."""
    from nmtlib.decode.translate import DecodeOptions, decode_data

    from test_decode_graphs import model_of, sentences

    data = sentences(12)
    for name, tau in [("global-general-feed", None), ("shu-flexible", 1.2)]:
        model = model_of(name, device="cuda")
        for bs in (1, 5):
            eager, _ = decode_data([model], data, DecodeOptions(beam=5, batch_size=bs, tau=tau), torch.device("cuda"))
            graphed, _ = decode_data([model], data, DecodeOptions(beam=5, batch_size=bs, tau=tau, cuda_graphs=True),
                                     torch.device("cuda"))
            assert [h.tokens for h in eager] == [h.tokens for h in graphed]
            assert [h.score for h in eager] == pytest.approx([h.score for h in graphed], abs=1e-4)


@needs_cuda
def test_a_pending_step_is_read_without_waiting_for_work_queued_after_it():
    """What ``decode.in_flight`` rests on: reading a step's candidates waits for that step only,
    so the host can do its bookkeeping while the GPU runs another search's step."""
    from nmtlib.decode.steps import PendingStep

    packed = torch.arange(12, dtype=torch.float64, device="cuda").view(3, 4)
    pending = PendingStep(packed * 2, None)
    a = torch.randn(8192, 8192, device="cuda")
    for _ in range(20):  # about a second of queued work
        a = a @ a / 8192
    host, _ = pending.result()
    assert not torch.cuda.current_stream().query()  # the later work is still running
    assert host == (torch.arange(12, dtype=torch.float64).view(3, 4) * 2).tolist()
    torch.cuda.synchronize()


@needs_cuda
def test_decoding_with_batches_in_flight_equals_one_at_a_time():
    """``decode.in_flight``: three batches interleaved on the GPU, graphed or eager, Flexible
    Attention with τ included, translate as one batch at a time does."""
    from nmtlib.decode.translate import DecodeOptions, decode_data

    from test_decode_graphs import model_of, sentences

    data = sentences(16)
    for name, tau in [("global-general-feed", None), ("local-m-general-feed", None), ("shu-flexible", 1.2)]:
        model = model_of(name, device="cuda")
        one, _ = decode_data([model], data, DecodeOptions(beam=5, batch_size=3, tau=tau), torch.device("cuda"))
        for graphs in (False, True):
            opts = DecodeOptions(beam=5, batch_size=3, tau=tau, cuda_graphs=graphs, in_flight=3)
            three, times = decode_data([model], data, opts, torch.device("cuda"))
            assert [h.tokens for h in one] == [h.tokens for h in three]
            assert [h.score for h in one] == pytest.approx([h.score for h in three], abs=1e-4)
            assert all(t > 0 for t in times)


class _PrecisionProbe:
    """A model that records the float32 matrix-product precision at each decoder step."""

    def __init__(self, model) -> None:
        self.model, self.seen = model, set()

    def encode(self, src, src_lengths, tau=None):
        return self.model.encode(src, src_lengths, tau)

    def graph_key(self, t, tau=None):
        return self.model.graph_key(t, tau)

    def step(self, y_prev, state, memory):
        self.seen.add(torch.get_float32_matmul_precision())
        return self.model.step(y_prev, state, memory)


@pytest.mark.parametrize("device", ["cpu", pytest.param("cuda", marks=needs_cuda)])
def test_decode_tf32_holds_only_while_decoding_on_cuda(device):
    """``decode.tf32``: every step of a CUDA decode runs with TF32 matrix products, graphed steps
    included (they are recorded under it); a CPU decode is untouched; afterwards the process's
    own setting is back."""
    from nmtlib.decode.translate import DecodeOptions, decode_data

    from test_decode_graphs import model_of, sentences

    before = torch.get_float32_matmul_precision()
    data = sentences(6)
    probe = _PrecisionProbe(model_of("global-general-feed", device=device))
    plain, _ = decode_data([model_of("global-general-feed", device=device)], data,
                           DecodeOptions(beam=4, batch_size=3), torch.device(device))
    for graphs in (False, True):
        probe.seen.clear()
        tf32, _ = decode_data([probe], data, DecodeOptions(beam=4, batch_size=3, tf32=True, cuda_graphs=graphs),
                              torch.device(device))
        assert probe.seen == ({"high"} if device == "cuda" else {before})
        assert torch.get_float32_matmul_precision() == before
        # TF32 rounds inputs to 10 mantissa bits: the scores stay close to float32's
        assert [h.score for h in tf32] == pytest.approx([h.score for h in plain], rel=1e-2, abs=1e-2)


@needs_cuda
@pytest.mark.parametrize("name", ["global-general-feed", "rnnsearch"])
def test_bf16_training_keeps_the_recurrent_state_in_float32(name):
    """Under bf16 autocast the products are bf16, the LSTM cell state and the GRU state float32:
    rounded at every step, a state carried through the sentence trained far worse (RESULTS.md, G7)."""
    from nmtlib.models.cells import _gru_cell, _lstm_cell

    torch.manual_seed(0)
    B, E, H = 4, 8, 16
    x, h, c = (torch.randn(B, n, device="cuda") for n in (E, H, H))
    with torch.autocast("cuda", dtype=torch.bfloat16):
        w_ih = torch.randn(4 * H, E, device="cuda")
        w_hh = torch.randn(4 * H, H, device="cuda")
        hy, cy = _lstm_cell(x, h, c, w_ih, w_hh, torch.randn(4 * H, device="cuda"))
        gy = _gru_cell(x, h, w_ih[: 3 * H], w_hh[: 3 * H], torch.randn(3 * H, device="cuda"),
                       torch.randn(3 * H, device="cuda"))
    assert hy.dtype == cy.dtype == gy.dtype == torch.float32
