"""bf16 training on the CPU (``train.bf16``): where it is allowed, what stays float32 under it, the
loss computed in float32 blocks, and exact resume after SIGKILL."""

from __future__ import annotations

import json
import signal
import subprocess
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from conftest import cpuinfo_has_native_bf16, keeping_checkpoints, tiny_train_cmd
from nmtlib import checkpoint
from nmtlib.models.attention import FlexibleAttention, LocalPredictiveAttention, Memory, length_mask
from nmtlib.models.scores import GeneralScore, LocationScore
from nmtlib.precision import native_bf16, require_bf16
from nmtlib.train.loss import LowPrecisionNLL, loss_terms


NATIVE = native_bf16(torch.device("cpu"))
needs_native = pytest.mark.skipif(not NATIVE, reason="this CPU has no native bf16")
CPU_BF16 = lambda: torch.autocast("cpu", dtype=torch.bfloat16)  # noqa: E731


def test_native_bf16_agrees_with_the_kernels_cpu_flags():
    flags = cpuinfo_has_native_bf16()
    if flags is None:
        pytest.skip("no /proc/cpuinfo to read the CPU flags from")
    assert NATIVE == flags


def test_bf16_is_refused_in_one_line_naming_the_key_where_it_would_be_emulated():
    if not NATIVE:
        with pytest.raises(ValueError, match=r"^train\.bf16: this CPU has no native bf16.*set train\.bf16: false$"):
            require_bf16(torch.device("cpu"), "train.bf16")
    else:
        require_bf16(torch.device("cpu"), "train.bf16")
    with pytest.raises(ValueError, match=r"^decode\.bf16: device 'meta'"):
        require_bf16(torch.device("meta"), "decode.bf16")


def _memory(B: int = 3, S: int = 7, H: int = 8) -> Memory:
    torch.manual_seed(0)
    lengths = torch.tensor([7, 5, 3])[:B]
    values = torch.randn(B, S, H)
    return Memory(values, length_mask(lengths, S), lengths)


@needs_native
def test_local_p_position_and_gaussian_are_float32_and_exact_under_autocast():
    att = LocalPredictiveAttention(GeneralScore(8, 8), query_size=8, window=2)
    query, lengths = torch.randn(3, 8), torch.tensor([7, 5, 3])
    exact = att.aligned_position(query, lengths)  # float32 outside autocast
    with CPU_BF16():
        p = att.aligned_position(query.bfloat16(), lengths)
        s = torch.round(p).long().unsqueeze(1) + torch.arange(-2, 3)
        gauss = att.gaussian(s, p)
    assert p.dtype == gauss.dtype == torch.float32
    # the query itself arrives in bf16, so compare with float32 arithmetic on the same rounded query
    assert torch.equal(p, att.aligned_position(query.bfloat16().float(), lengths))
    assert not torch.equal(exact, exact.bfloat16().float())  # bf16 would have rounded p_t
    want = torch.exp(-((s.float() - p.unsqueeze(1)) ** 2) / (2 * 1.0**2))  # σ = D/2 = 1
    assert torch.equal(gauss, want)


@needs_native
def test_flexible_strength_penalty_and_focus_are_float32_under_autocast():
    memory = _memory()
    att = FlexibleAttention(GeneralScore(8, 8), query_size=8, embedding_size=4)
    memory = att.precompute(memory)
    state = att.init_state(memory)
    with CPU_BF16():
        memory = att.precompute(memory)
        out, new = att(torch.randn(3, 8), memory, att.init_state(memory), 0, torch.randn(3, 4))
        gate = att.strength(torch.randn(3, 8), torch.randn(3, 4))
    assert state["focus"].dtype == new["focus"].dtype == torch.float32
    assert out.gate.dtype == gate.dtype == out.weights.dtype == torch.float32
    assert memory.keys.dtype == torch.bfloat16  # the score's products do run in bf16


@needs_native
def test_location_score_logits_are_float32_under_autocast():
    score = LocationScore(8, 8, max_positions=5)
    query = torch.randn(3, 8)
    with CPU_BF16():
        logits = score(query, torch.zeros(3, 6, 0), torch.arange(6).expand(3, 6))
    assert logits.dtype == torch.float32
    assert torch.isinf(logits[:, 5]).all() and torch.isfinite(logits[:, :5]).all()


def test_low_precision_nll_equals_float32_cross_entropy_and_its_gradient_to_one_rounding():
    torch.manual_seed(0)
    n, vocab = 300, 1500  # 300 rows: several blocks of 1 << 18 // 1500 = 174 rows
    logits = (torch.randn(n, vocab) * 4).bfloat16()
    target = torch.randint(0, vocab, (n,))
    mine = logits.clone().requires_grad_()
    nll = LowPrecisionNLL.apply(mine, target)
    (nll * 0.5).backward()
    ref = logits.clone().requires_grad_()
    want = F.cross_entropy(ref.float(), target, reduction="sum")
    (want * 0.5).backward()
    assert nll.dtype == torch.float32
    assert torch.allclose(nll, want, rtol=1e-6)
    # softmax − one-hot, both in float32, rounded once to bf16: at most one bf16 step apart
    step = torch.finfo(torch.bfloat16).eps * ref.grad.float().abs().clamp(min=2**-126)
    assert ((mine.grad.float() - ref.grad.float()).abs() <= step).all()
    assert mine.grad.dtype == torch.bfloat16


def test_loss_terms_takes_the_block_path_for_bf16_cpu_logits_only():
    torch.manual_seed(1)
    tgt_out = torch.tensor([[5, 6, 0], [7, 0, 0]])  # 0 is padding
    logits = torch.randn(3, 10)
    fp32, _ = loss_terms(logits, tgt_out, None, 0.0)
    low, _ = loss_terms(logits.bfloat16(), tgt_out, None, 0.0)
    assert torch.allclose(fp32, F.cross_entropy(logits, torch.tensor([5, 6, 7]), reduction="sum"))
    assert torch.allclose(low, F.cross_entropy(logits.bfloat16().float(), torch.tensor([5, 6, 7]), reduction="sum"))
    assert low.grad_fn is None or "LowPrecisionNLL" in type(low.grad_fn).__name__


SPEC = keeping_checkpoints({  # the test compares the final resume state of runs
    "name": "g",
    "options": {
        "embedding_size": 16, "hidden_size": 16, "layers": 2, "attention": "local-p", "score": "general",
        "window": 2, "dropout": 0.1,
        "train": {"optimizer": "adam", "lr": 0.01, "loss_norm": "tokens", "batch_size": 16, "epochs": 2,
                  "checkpoint_every": 3, "decay_start": 2, "bf16": True, "device": "cpu"},
    },
})


def _run(corpus: Path, out: Path) -> subprocess.CompletedProcess:
    return subprocess.run(tiny_train_cmd(corpus, out, SPEC), capture_output=True, text=True, timeout=600)


@needs_native
def test_bf16_cpu_training_killed_and_resumed_gives_the_uninterrupted_weights_bit_for_bit(tiny_corpus, tmp_path):
    from test_engine import assert_same_weights, wait_for_step

    reference = tmp_path / "uninterrupted"
    run = _run(tiny_corpus, reference)
    assert run.returncode == 0, run.stderr[-2000:]
    # the weights stay float32: only the products ran in bf16
    assert all(v.dtype == torch.float32 for v in checkpoint.load(reference / "model.pt")["model"].values()
               if v.is_floating_point())
    killed = tmp_path / "killed"
    proc = subprocess.Popen(tiny_train_cmd(tiny_corpus, killed, SPEC), stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    step = wait_for_step(killed / "checkpoints" / "last.pt", proc, 6)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert step > 0 and not (killed / "model.pt").exists()
    resumed = _run(tiny_corpus, killed)
    assert resumed.returncode == 0 and "resuming from" in resumed.stderr, resumed.stderr[-2000:]
    assert_same_weights(killed / "checkpoints" / "last.pt", reference / "checkpoints" / "last.pt")
    assert_same_weights(killed / "model.pt", reference / "model.pt")


def test_bf16_training_differs_from_float32_so_the_switch_is_real(tiny_corpus, tmp_path):
    if not NATIVE:
        run = _run(tiny_corpus, tmp_path / "bf16")
        assert run.returncode != 0 and "train.bf16: this CPU has no native bf16" in run.stderr.strip().splitlines()[-1]
        assert not (tmp_path / "bf16" / "checkpoints").exists()
        return
    fp32 = json.loads(json.dumps(SPEC))
    fp32["options"]["train"].update(bf16=False, epochs=1)
    bf16 = json.loads(json.dumps(SPEC))
    bf16["options"]["train"]["epochs"] = 1
    outs = []
    for name, spec in (("fp32", fp32), ("bf16", bf16)):
        run = subprocess.run(tiny_train_cmd(tiny_corpus, tmp_path / name, spec), capture_output=True, text=True,
                             timeout=600)
        assert run.returncode == 0, run.stderr[-2000:]
        outs.append(checkpoint.load(tmp_path / name / "model.pt")["model"])
    assert any(not torch.equal(outs[0][k], outs[1][k]) for k in outs[0])
