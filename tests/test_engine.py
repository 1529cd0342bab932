"""Training and decoding engine: exact resume after SIGKILL, checkpoint on SIGTERM and Ctrl-C, the
papers' schedules, beam search = greedy at beam 1, ensembles, batch vs single decoding."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import torch

from conftest import keeping_checkpoints, restored_torch_switches, tiny_train_cmd, tiny_train_paths
from nmtlib.config import TrainConfig, resolve_variant
from nmtlib.data.batching import ParallelData, collate, length_sorted_batches
from nmtlib.data.vocab import Vocabulary
from nmtlib.decode.beam import beam_search, greedy_search
from nmtlib.decode.steps import Ensemble
from nmtlib import checkpoint
from nmtlib.train.schedule import learning_rate

ROOT = Path(__file__).resolve().parent.parent

SPEC = keeping_checkpoints({  # the tests compare the final resume state of runs
    "name": "g",
    "options": {
        "embedding_size": 16, "hidden_size": 16, "layers": 1, "attention": "global", "score": "general",
        "dropout": 0.1,  # dropout draws from the RNG: resuming must restore it too
        "train": {"optimizer": "adam", "lr": 0.01, "loss_norm": "tokens", "batch_size": 16, "epochs": 2,
                  "checkpoint_every": 3, "decay_start": 2},
    },
})


def train_cmd(corpus: Path, out: Path, spec: dict = SPEC) -> list[str]:
    return tiny_train_cmd(corpus, out, spec)


def weights(path: Path) -> dict[str, torch.Tensor]:
    return checkpoint.load(path)["model"]


def assert_same_weights(a: Path, b: Path) -> None:
    wa, wb = weights(a), weights(b)
    assert wa.keys() == wb.keys()
    for k in wa:
        assert torch.equal(wa[k], wb[k]), k


def wait_for_step(last: Path, proc: subprocess.Popen, min_step: int, timeout: float = 300) -> int:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if last.exists():
            try:
                step = checkpoint.load(last)["step"]
            except Exception:  # noqa: BLE001 — being replaced right now; atomic rename makes this rare
                step = -1
            if step >= min_step:
                return step
        if proc.poll() is not None:
            pytest.fail(f"training ended (code {proc.returncode}) before step {min_step}")
        time.sleep(0.05)
    pytest.fail("timed out waiting for a checkpoint")


@pytest.fixture(scope="module")
def reference_run(tiny_corpus, tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("uninterrupted")
    subprocess.run(train_cmd(tiny_corpus, out), check=True, capture_output=True, timeout=600)
    return out


def test_sigkill_mid_epoch_then_resume_gives_identical_weights(tiny_corpus, reference_run, tmp_path):
    out = tmp_path / "killed"
    proc = subprocess.Popen(train_cmd(tiny_corpus, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    step = wait_for_step(out / "checkpoints" / "last.pt", proc, 6)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert not (out / "model.pt").exists(), "the run was meant to be killed before finishing"
    saved_at = checkpoint.load(out / "checkpoints" / "last.pt")["step"]
    resumed = subprocess.run(train_cmd(tiny_corpus, out), capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert "resuming from" in resumed.stderr and step > 0
    # the record lists both starts: at step 0, and at the step of the resume state the kill left
    starts = json.loads((out / "env.json").read_text())["starts"]
    assert [s["step"] for s in starts] == [0, saved_at]
    for start in starts:
        assert start["git_commit"] and start["processor"] and start["cpu_capability"] and start["device"] == "cpu"
    assert_same_weights(out / "checkpoints" / "last.pt", reference_run / "checkpoints" / "last.pt")
    assert_same_weights(out / "model.pt", reference_run / "model.pt")
    # the learning curve is the same too (one row per epoch)
    assert (out / "train_log.csv").read_text().count("\n") == (reference_run / "train_log.csv").read_text().count("\n")


def test_sigterm_writes_checkpoint_exits_143_and_resumes(tiny_corpus, reference_run, tmp_path):
    out = tmp_path / "preempted"
    proc = subprocess.Popen(train_cmd(tiny_corpus, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_step(out / "checkpoints" / "last.pt", proc, 3)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("training finished before SIGTERM arrived")
    assert proc.returncode == 143, err
    assert "SIGTERM: checkpoint written" in err
    subprocess.run(train_cmd(tiny_corpus, out), check=True, capture_output=True, timeout=600)
    assert_same_weights(out / "model.pt", reference_run / "model.pt")


def test_sigterm_as_a_resumed_run_starts_is_a_preemption_too(tiny_corpus, tmp_path):
    """SIGTERM the moment a resumed run says it resumes (before its first step): the run still
    exits 143 with its resume state written, as a preemption at any other moment does (the handler
    used to be installed only at the first step, and a signal before it killed the run outright)."""
    out = tmp_path / "early"
    proc = subprocess.Popen(train_cmd(tiny_corpus, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    wait_for_step(out / "checkpoints" / "last.pt", proc, 3)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    resumed = subprocess.Popen(train_cmd(tiny_corpus, out), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                               text=True)
    seen = []
    for line in resumed.stderr:
        seen.append(line)
        if "[train] resuming from" in line:
            resumed.send_signal(signal.SIGTERM)
            break
    err = "".join(seen) + resumed.stderr.read()
    assert resumed.wait(120) == 143, err
    assert "SIGTERM: checkpoint written at step" in err


def test_ctrl_c_writes_checkpoint_exits_130_and_resumes(tiny_corpus, reference_run, tmp_path):
    """Ctrl-C (SIGINT) ends the step in progress and writes the resume state, as SIGTERM does: the
    run resumed from it ends with the uninterrupted run's weights."""
    out = tmp_path / "interrupted"
    proc = subprocess.Popen(train_cmd(tiny_corpus, out), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_step(out / "checkpoints" / "last.pt", proc, 3)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("training finished before SIGINT arrived")
    assert proc.returncode == 130, err
    assert "SIGINT: checkpoint written at step" in err and "KeyboardInterrupt" not in err
    written = int(err.split("SIGINT: checkpoint written at step ")[1].split(";")[0])
    assert checkpoint.load(out / "checkpoints" / "last.pt")["step"] == written  # the state written at the signal
    resumed = subprocess.run(train_cmd(tiny_corpus, out), capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0 and f"step {written}" in resumed.stderr, resumed.stderr
    assert_same_weights(out / "model.pt", reference_run / "model.pt")


def test_changed_config_does_not_resume_stale_checkpoint(tiny_corpus, reference_run, tmp_path):
    """A finished model of other settings is not replaced (issue #41, M10); with its outputs removed,
    as Snakemake removes a job's outputs before it retrains, the kept checkpoint of the old settings
    is set aside and training starts afresh."""
    out = tmp_path / "changed"
    subprocess.run(train_cmd(tiny_corpus, out), check=True, capture_output=True, timeout=600)
    finished = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    spec = json.loads(json.dumps(SPEC))
    spec["options"]["train"]["lr"] = 0.02
    refused = subprocess.run(train_cmd(tiny_corpus, out, spec), capture_output=True, text=True, timeout=600)
    assert refused.returncode == 2 and "holds a finished model of other settings (train.lr" in refused.stderr
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == finished
    for name in ("model.pt", "train_log.csv", "env.json"):
        (out / name).unlink()
    run = subprocess.run(train_cmd(tiny_corpus, out, spec), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0 and "belongs to another configuration" in run.stderr
    assert (out / "checkpoints" / "last.stale.pt").exists()


def test_divergence_stops_with_clear_error_and_keeps_last_checkpoint(tiny_corpus, tmp_path):
    spec = json.loads(json.dumps(SPEC))
    # plain SGD at an absurd rate with no effective clipping overflows within a few steps
    spec["options"]["train"].update(optimizer="sgd", lr=1e38, clip=1e38, checkpoint_every=1, init_range=0.1)
    run = subprocess.run(train_cmd(tiny_corpus, tmp_path, spec), capture_output=True, text=True, timeout=600)
    assert run.returncode == 2
    assert "loss became" in run.stderr and "last good state" in run.stderr
    if (tmp_path / "checkpoints" / "last.pt").exists():
        state = checkpoint.load(tmp_path / "checkpoints" / "last.pt")
        assert all(torch.isfinite(v).all() for v in state["model"].values() if v.is_floating_point())


def test_loss_reader_returns_values_lag_steps_late():
    from nmtlib.train.step import LossReader

    reader = LossReader(torch.device("cpu"), lag=1)
    for step in (1, 2, 3):
        reader.push(step, torch.tensor(float(step)), torch.tensor(10.0 * step), tokens=step)
    assert [(d.step, d.loss, d.nll, d.tokens) for d in reader.pop()] == [(1, 1.0, 10.0, 1), (2, 2.0, 20.0, 2)]
    assert len(reader) == 1 and [d.step for d in reader.pop(0)] == [3] and len(reader) == 0
    assert LossReader(torch.device("cpu")).lag == 0  # the CPU checks each loss before its update


def test_late_loss_reads_stop_a_diverged_run_before_its_weights_are_saved(tiny_corpus, tmp_path):
    """The GPU's path (each loss read one step late, no host sync per step), run on the CPU: the
    divergence is still caught before any checkpoint takes the diverged weights."""
    from nmtlib.train.trainer import Trainer, TrainingError

    spec = json.loads(json.dumps(SPEC))
    spec["options"]["train"].update(optimizer="sgd", lr=1e38, clip=1e38, checkpoint_every=3, init_range=0.1)
    paths = tiny_train_paths(tiny_corpus, tmp_path)
    with restored_torch_switches():
        trainer = Trainer(resolve_variant(spec["name"], spec["options"]), paths, progress=False, loss_lag=1)
        with pytest.raises(TrainingError, match="before that step's weights were saved") as err:
            trainer.run()
    assert "last good state" in str(err.value)
    if paths.last.exists():
        state = checkpoint.load(paths.last)
        assert all(torch.isfinite(v).all() for v in state["model"].values() if v.is_floating_point())


def test_luong_and_shu_schedules():
    luong = TrainConfig()  # halve every epoch after epoch 5
    assert [learning_rate(luong, e) for e in range(1, 9)] == [1, 1, 1, 1, 1, 0.5, 0.25, 0.125]
    dropout = resolve_variant("d", {"dropout": 0.2}).train  # 12 epochs, halving after epoch 8
    assert dropout.epochs == 12 and learning_rate(dropout, 8) == 1 and learning_rate(dropout, 9) == 0.5
    shu = resolve_variant("s", {"arch": "shu", "train": {"preset": "shu"}}).train
    assert (shu.optimizer, shu.lr, shu.epochs, shu.clip, shu.batch_size) == ("adam", 1e-4, 6, 3.0, 64)
    assert learning_rate(shu, 3) == 1e-4 and learning_rate(shu, 4) == 5e-5  # halve from epoch 4
    over = resolve_variant("o", {"train": {"preset": "shu", "batch_size": 8}}).train
    assert over.batch_size == 8 and over.optimizer == "adam"  # any field overridable


def test_batches_are_length_sorted_and_order_depends_on_seed_and_epoch(tiny_corpus):
    sv, tv = Vocabulary.load(tiny_corpus / "vocab.src"), Vocabulary.load(tiny_corpus / "vocab.tgt")
    data = ParallelData.load(tiny_corpus / "train.src", tiny_corpus / "train.tgt", sv, tv)
    a = length_sorted_batches(data, 32, seed=1, epoch=1)
    assert a == length_sorted_batches(data, 32, seed=1, epoch=1)
    assert a != length_sorted_batches(data, 32, seed=1, epoch=2)
    assert sorted(i for b in a for i in b) == list(range(len(data)))
    # batches cut the length-sorted order into consecutive slices: no two batches' lengths interleave
    ranges = sorted((min(len(data.tgt[i]) for i in b), max(len(data.tgt[i]) for i in b)) for b in a)
    assert all(hi <= next_lo for (_, hi), (next_lo, _) in zip(ranges, ranges[1:]))


# -- decoding ---------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def trained(tiny_corpus, reference_run):
    from nmtlib.checkpoint import load_model

    sv, tv = Vocabulary.load(tiny_corpus / "vocab.src"), Vocabulary.load(tiny_corpus / "vocab.tgt")
    data = ParallelData.load(tiny_corpus / "test.src", None, sv, tv)
    model, _ = load_model(reference_run / "model.pt", torch.device("cpu"))
    return model, data


def test_beam_one_equals_greedy(trained):
    model, data = trained
    batch = collate(data, list(range(len(data))))
    beam = beam_search(Ensemble([model]), batch, beam=1, max_len_ratio=1.5)
    greedy = greedy_search(Ensemble([model]), batch, max_len_ratio=1.5)
    assert [h.tokens for h in beam] == [h.tokens for h in greedy]
    assert [h.score for h in beam] == pytest.approx([h.score for h in greedy], abs=1e-3)


def test_batch_and_single_decoding_are_identical(trained):
    model, data = trained
    idx = list(range(12))
    together = beam_search(Ensemble([model]), collate(data, idx), beam=4)
    for i, h in zip(idx, together):
        alone = beam_search(Ensemble([model]), collate(data, [i]), beam=4)[0]
        assert alone.tokens == h.tokens
        assert alone.score == pytest.approx(h.score, abs=1e-4)


def test_ensemble_of_one_and_of_copies_equal_the_model(trained):
    model, data = trained
    batch = collate(data, list(range(10)))
    single = beam_search(Ensemble([model]), batch, beam=3)
    copies = beam_search(Ensemble([model, model]), batch, beam=3)  # log((p + p)/2) = log p
    assert [h.tokens for h in single] == [h.tokens for h in copies]
    assert [h.score for h in single] == pytest.approx([h.score for h in copies], abs=1e-4)


class _RowCounter:
    """Wraps a model and records how many rows each decoder step computes."""

    def __init__(self, model):
        self.model, self.rows = model, []

    def encode(self, src, src_lengths, tau=None):
        return self.model.encode(src, src_lengths, tau)

    def step(self, y_prev, state, memory):
        self.rows.append(y_prev.shape[0])
        return self.model.step(y_prev, state, memory)


def test_beam_search_computes_no_row_that_cannot_change_a_result(trained):
    """Step 0 runs one row per sentence (every hypothesis is the empty prefix); a finished
    sentence leaves the batch; and the outputs are those of decoding each sentence alone."""
    model, data = trained
    idx = list(range(12))
    counter = _RowCounter(model)
    together = beam_search(Ensemble([counter]), collate(data, idx), beam=4)
    assert counter.rows[0] == 12
    assert counter.rows[1] == 12 * 4
    assert all(a >= b for a, b in zip(counter.rows[1:], counter.rows[2:])), counter.rows
    assert counter.rows[-1] < 12 * 4, counter.rows
    for i, h in zip(idx, together):
        assert beam_search(Ensemble([model]), collate(data, [i]), beam=4)[0].tokens == h.tokens


def test_beam_search_finds_no_worse_score_than_greedy(trained):
    model, data = trained
    batch = collate(data, list(range(len(data))))
    greedy = greedy_search(Ensemble([model]), batch)
    beam = beam_search(Ensemble([model]), batch, beam=5)
    assert all(b.score >= g.score - 1e-4 for b, g in zip(beam, greedy))


def test_translate_cli_writes_unk_replaced_output_and_details(tiny_corpus, reference_run, tmp_path):
    prefix = tmp_path / "test.beam3"
    subprocess.run([
        sys.executable, "-m", "nmtlib", "translate", "--model", str(reference_run / "model.pt"),
        "--src", str(tiny_corpus / "test.src"), "--src-vocab", str(tiny_corpus / "vocab.src"),
        "--tgt-vocab", str(tiny_corpus / "vocab.tgt"), "--out", str(prefix), "--beam", "3",
        "--dict", str(tiny_corpus / "lexicon.tsv"), "--no-progress", "--threads", "1",
    ], check=True, capture_output=True, timeout=300)
    plain = Path(f"{prefix}.txt").read_text().splitlines()
    replaced = Path(f"{prefix}.unk.txt").read_text().splitlines()
    details = [json.loads(line) for line in Path(f"{prefix}.jsonl").read_text().splitlines()]
    n = len((tiny_corpus / "test.src").read_text().splitlines())
    assert len(plain) == len(replaced) == len(details) == n
    assert all("<unk>" not in line for line in replaced)
    assert all(d["hypothesis_steps"] > 0 and d["avg_window"] > 0 and d["time_ms"] > 0 for d in details)


def test_unk_replacement_uses_attention_argmax_and_dictionary():
    import numpy as np

    from nmtlib.decode.unk import replace_unknowns

    attention = np.array([[0.1, 0.9, 0.0], [0.2, 0.1, 0.7], [0.5, 0.5, 0.0]])
    out = replace_unknowns(["<unk>", "b", "<unk>"], ["x", "y", "z"], attention, {"y": "Y"})
    assert out == ["Y", "b", "x"]  # y via the dictionary; x copied (ties go to the first word)


def test_footnote_14_rows_belong_to_the_right_target_word():
    import numpy as np

    from nmtlib.decode.forced import alignment_rows

    steps = np.arange(12).reshape(4, 3)  # 4 decoder steps (T = 3 words + <eos>), S = 3
    assert alignment_rows(steps, 3, content_based=True).tolist() == steps[1:4].tolist()
    assert alignment_rows(steps, 3, content_based=False).tolist() == steps[0:3].tolist()
    assert alignment_rows(steps, 3, content_based=True, convention="predicted").tolist() == steps[0:3].tolist()
    with pytest.raises(ValueError, match="convention"):
        alignment_rows(steps, 3, content_based=True, convention="other")


def test_checkpoint_write_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "ck.pt"
    checkpoint.save_atomic({"x": torch.ones(2)}, path)

    def broken_save(obj, f):
        f.write(b"partial")
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(torch, "save", broken_save)
    with pytest.raises(OSError):
        checkpoint.save_atomic({"x": torch.zeros(2)}, path)
    assert torch.equal(checkpoint.load(path)["x"], torch.ones(2))  # the previous checkpoint is intact
    assert [p.name for p in tmp_path.iterdir()] == ["ck.pt"]  # no temporary file left behind


def test_finetuning_objective_subtracts_beta_times_mean_strength(tiny_corpus):
    """Shu & Nakayama Eq. 9: J − β·(1/T)Σ_t g(t), per sentence, over real target positions."""
    from nmtlib.data.vocab import PAD_ID
    from nmtlib.models.builder import build_model
    from nmtlib.train.loss import batch_loss

    sv, tv = Vocabulary.load(tiny_corpus / "vocab.src"), Vocabulary.load(tiny_corpus / "vocab.tgt")
    data = ParallelData.load(tiny_corpus / "train.src", tiny_corpus / "train.tgt", sv, tv)
    batch = collate(data, [0, 1, 2])
    torch.manual_seed(0)
    model = build_model(resolve_variant("f", {"arch": "shu", "attention": "flexible", "embedding_size": 8,
                                              "hidden_size": 8, "output_size": 8}).model, len(sv), len(tv)).eval()
    plain, nll = batch_loss(model, batch)
    tuned, nll2 = batch_loss(model, batch, beta=0.1)
    gates = model(batch.src, batch.src_lengths, batch.tgt_in).gates
    real = (batch.tgt_out != PAD_ID).float()
    expected = nll - 0.1 * ((gates * real).sum(1) / real.sum(1)).sum()
    assert torch.equal(plain, nll) and torch.allclose(tuned, expected)


def test_finetuning_variant_inherits_its_parents_model():
    variants = {"flex": {"arch": "shu", "attention": "flexible", "hidden_size": 32},
                "flex-ft": {"finetune_from": "flex", "train": {"beta": 0.1, "epochs": 1}}}
    ft = resolve_variant("flex-ft", variants["flex-ft"], variants=variants)
    assert ft.model == resolve_variant("flex", variants["flex"]).model and ft.train.beta == 0.1
    with pytest.raises(Exception, match="inherits the model"):
        resolve_variant("bad", {"finetune_from": "flex", "hidden_size": 8}, variants=variants)


def test_translate_without_unk_replace_copies_nothing_and_global_window_is_mean_source_length(
        tiny_corpus, tmp_path):
    """Shu & Nakayama's protocol: ``--no-unk-replace`` leaves every ``<unk>`` in place (the
    replaced file is the raw output), and the window of a global-attention model is the mean
    source length, each sentence counted once (its own window is its length)."""
    import shutil

    from nmtlib.files import read_lines
    from nmtlib.data.vocab import Vocabulary

    # a 12-word target vocabulary: <unk> is the most frequent target token, so the model writes it
    corpus = tmp_path / "corpus"
    shutil.copytree(tiny_corpus, corpus)
    Vocabulary.build(read_lines(corpus / "train.tgt"), 12).save(corpus / "vocab.tgt")
    spec = {**SPEC, "options": {**SPEC["options"], "train": {**SPEC["options"]["train"], "epochs": 3}}}
    subprocess.run(train_cmd(corpus, tmp_path / "model", spec), check=True, capture_output=True, timeout=600)
    src_lines = (corpus / "test.src").read_text().splitlines()
    runs = {}
    for flag in ([], ["--no-unk-replace"]):
        prefix = tmp_path / ("raw" if flag else "replaced") / "test.beam3"
        summary = tmp_path / f"summary{len(flag)}.json"
        subprocess.run([
            sys.executable, "-m", "nmtlib", "translate", "--model", str(tmp_path / "model" / "model.pt"),
            "--src", str(corpus / "test.src"), "--src-vocab", str(corpus / "vocab.src"),
            "--tgt-vocab", str(corpus / "vocab.tgt"), "--out", str(prefix), "--beam", "3",
            "--dict", str(corpus / "lexicon.tsv"), "--no-progress", "--threads", "1",
            "--summary-out", str(summary), *flag,
        ], check=True, capture_output=True, timeout=300)
        runs[bool(flag)] = (Path(f"{prefix}.txt").read_text(), Path(f"{prefix}.unk.txt").read_text(),
                            json.loads(summary.read_text()))
    plain, replaced, summary = runs[True]
    assert "<unk>" in plain and "<unk>" not in runs[False][1]  # there was something to replace
    assert replaced == plain and plain == runs[False][0]
    # global attention scores every source word: each sentence's window is its length
    lengths = [len(line.split()) or 1 for line in src_lines]
    assert summary["avg_window"] == pytest.approx(sum(lengths) / len(lengths))


@pytest.mark.parametrize("ppls, patience, min_improvement, stop", [
    ([10.0, 8.0, 7.9], 1, 0.02, True),     # 7.9 is 1.25% below 8.0: not an improvement
    ([10.0, 8.0, 7.8], 1, 0.02, False),    # 7.8 is 2.5% below 8.0
    ([10.0, 8.0, 8.5], 1, 0.02, True),     # worse
    ([10.0, 8.0, 7.9, 7.85], 2, 0.02, True),   # two evaluations in a row below 2% against 8.0 and 7.9
    ([10.0, 8.0, 7.9, 7.5], 2, 0.02, False),   # 7.5 is 5.1% below the best before it (7.9)
    ([10.0, 9.9], 1, 0.0, False),          # min_improvement 0: any drop improves
    ([10.0, 10.0], 1, 0.0, True),
    ([10.0], 1, 0.02, False),              # the first evaluation always improves
    ([10.0, 12.0, 14.0], 0, 0.02, False),  # patience 0: off
])
def test_plateaued(ppls, patience, min_improvement, stop):
    from nmtlib.train.schedule import plateaued

    assert plateaued(ppls, patience, min_improvement) is stop


def test_early_stopping_ends_training_and_a_rerun_trains_no_more(tiny_corpus, tmp_path):
    # min_improvement 0.99: the second epoch cannot cut dev perplexity by 99%, so training stops
    # after it, at 2 of 30 epochs; a rerun reads the stop from the checkpoint's log
    train = {**SPEC["options"]["train"], "epochs": 30, "patience": 1, "min_improvement": 0.99}
    spec = {**SPEC, "options": {**SPEC["options"], "train": train}}
    out = tmp_path / "early"
    first = subprocess.run(train_cmd(tiny_corpus, out, spec), capture_output=True, text=True, timeout=600)
    assert first.returncode == 0, first.stderr
    assert "early stop after epoch 2" in first.stderr
    log = (out / "train_log.csv").read_text().splitlines()
    assert [row.split(",")[0] for row in log[1:]] == ["1", "2"]
    before = weights(out / "checkpoints" / "last.pt")
    again = subprocess.run(train_cmd(tiny_corpus, out, spec), capture_output=True, text=True, timeout=600)
    assert again.returncode == 0 and "early stop after epoch 2" in again.stderr
    assert (out / "train_log.csv").read_text().splitlines() == log
    after = weights(out / "checkpoints" / "last.pt")
    assert all(torch.equal(before[k], after[k]) for k in before)
