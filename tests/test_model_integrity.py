"""Integrity end to end (issue #27): a model records the sha256 of the vocabularies (and training
files) it was trained with, and every command that loads a model refuses other vocabularies and
unreadable model files in one line naming the files; the learning curve survives a resume; align
writes whole files.

Every model here is a real tiny model trained for a few steps on the session's synthetic corpus;
expected hashes are computed here with hashlib, not with nmtlib's helpers.
"""

from __future__ import annotations

import csv
import hashlib
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
import torch

from conftest import TINY_TRAIN_SPEC, keeping_checkpoints, restored_torch_switches
from nmtlib.cli import main as nmtlib_main
from nmtlib import checkpoint

SPEC = keeping_checkpoints(TINY_TRAIN_SPEC)  # tests read the resume state of finished runs
ADVICE = "pass the vocabulary the model was trained with"


def sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def train_args(corpus: Path, out: Path, spec: dict = SPEC, src_vocab: Path | None = None,
               tgt_vocab: Path | None = None, init_from: Path | None = None) -> list[str]:
    args = [
        "train", "--variant-json", json.dumps(spec), "--threads", "1", "--no-progress",
        "--train-src", str(corpus / "train.src"), "--train-tgt", str(corpus / "train.tgt"),
        "--dev-src", str(corpus / "dev.src"), "--dev-tgt", str(corpus / "dev.tgt"),
        "--src-vocab", str(src_vocab or corpus / "vocab.src"), "--tgt-vocab", str(tgt_vocab or corpus / "vocab.tgt"),
        "--out", str(out),
    ]
    return args + (["--init-from", str(init_from)] if init_from else [])


def cli(args: list[str], capsys) -> tuple[int, str]:
    """``nmtlib ARGS`` in this process: its exit code and stderr (an uncaught exception fails the test)."""
    capsys.readouterr()
    with restored_torch_switches():
        rc = nmtlib_main(args)
    return rc, capsys.readouterr().err


@pytest.fixture(scope="module")
def trained(tiny_corpus, tmp_path_factory) -> Path:
    """A real model trained 6 steps with the corpus's vocabularies."""
    out = tmp_path_factory.mktemp("model")
    with restored_torch_switches():
        assert nmtlib_main(train_args(tiny_corpus, out)) == 0
    return out


@pytest.fixture(scope="module")
def vocabs(tiny_corpus, tmp_path_factory) -> dict[str, Path]:
    """Vocabulary files the model was not trained with (and one it was, copied elsewhere)."""
    from nmtlib.files import read_lines
    from nmtlib.data.synthetic import write_corpus
    from nmtlib.data.vocab import Vocabulary

    folder = tmp_path_factory.mktemp("vocabs")
    other = folder / "other-experiment"
    write_corpus(other, seed=8, sizes={"train": 60, "dev": 5, "test": 5})
    Vocabulary.build(read_lines(other / "train.src"), None).save(folder / "other.src")
    # the same words, same size, another order: every id means another word
    lines = (tiny_corpus / "vocab.src").read_text(encoding="utf-8").splitlines()
    words = lines[4:]
    random.Random(0).shuffle(words)
    assert words != lines[4:]
    (folder / "shuffled.src").write_text("\n".join(lines[:4] + words) + "\n", encoding="utf-8")
    shutil.copy(tiny_corpus / "vocab.src", folder / "copy.src")  # identical content, another path
    return {"other": folder / "other.src", "shuffled": folder / "shuffled.src", "copy": folder / "copy.src"}


def mismatch(model: Path, side: str, recorded: Path, given: Path, swapped: str = "") -> str:
    """The expected refusal, from hashes computed here."""
    hint = f" (that is the model's {swapped} vocabulary: source and target swapped?)" if swapped else ""
    return (f"{model} was trained with {side} vocabulary sha256 {sha256(recorded)[:12]}… ({recorded}); "
            f"{given} has {sha256(given)[:12]}…{hint}: {ADVICE}")


def command(name: str, model: Path, corpus: Path, out: Path, src_vocab: Path, tgt_vocab: Path) -> list[str]:
    """A command that loads ``model``, writing under ``out``."""
    vocab = ["--src-vocab", str(src_vocab), "--tgt-vocab", str(tgt_vocab), "--threads", "1"]
    if name == "translate":
        return ["translate", "--model", str(model), "--src", str(corpus / "test.src"), "--beam", "2",
                "--no-progress", "--out", str(out / "test"), *vocab]
    if name == "align":
        return ["align", "--model", str(model), "--src", str(corpus / "test.src"), "--tgt", str(corpus / "test.tgt"),
                "--out", str(out / "test.npz"), "--links-out", str(out / "test.links"), *vocab]
    if name == "evaluate":
        return ["evaluate", "perplexity", "--model", str(model), "--src", str(corpus / "test.src"),
                "--tgt", str(corpus / "test.tgt"), "--out", str(out / "ppl.json"), *vocab]
    assert name == "train"  # a fine-tuning stage from the model
    spec = json.loads(json.dumps(SPEC))
    spec["options"]["train"]["max_steps"] = 2
    return train_args(corpus, out / "finetuned", spec, src_vocab, tgt_vocab, init_from=model)


COMMANDS = ["translate", "align", "evaluate", "train"]


# == 1. What a checkpoint records =============================================================

def test_model_and_last_checkpoint_record_the_vocabulary_and_training_file_hashes(tiny_corpus, trained):
    c = tiny_corpus
    for path in (trained / "model.pt", trained / "checkpoints" / "last.pt"):
        record = checkpoint.load(path)
        assert record["vocabularies"] == {
            "source": {"path": str(c / "vocab.src"), "sha256": sha256(c / "vocab.src")},
            "target": {"path": str(c / "vocab.tgt"), "sha256": sha256(c / "vocab.tgt")},
        }, path
        assert record["training_data"] == {
            "source": {"path": str(c / "train.src"), "sha256": sha256(c / "train.src")},
            "target": {"path": str(c / "train.tgt"), "sha256": sha256(c / "train.tgt")},
        }, path
    # env.json keeps the same hashes (computed once now)
    env = json.loads((trained / "env.json").read_text())
    assert env["data_sha256"] == {str(c / name): sha256(c / name) for name in (
        "train.src", "train.tgt", "dev.src", "dev.tgt", "vocab.src", "vocab.tgt")}


def test_resume_follows_vocabulary_content_not_its_timestamp(tiny_corpus, tmp_path, capsys):
    corpus = tmp_path / "corpus"
    shutil.copytree(tiny_corpus, corpus)
    out = tmp_path / "model"
    assert cli(train_args(corpus, out), capsys)[0] == 0
    # the vocabulary written again, byte for byte (new mtime): the checkpoint is resumed
    vocab = corpus / "vocab.src"
    content = vocab.read_bytes()
    vocab.unlink()
    vocab.write_bytes(content)
    later = time.time() + 100
    os.utime(vocab, (later, later))
    (out / "model.pt").unlink()  # what Snakemake does before it reruns the job
    rc, err = cli(train_args(corpus, out), capsys)
    assert rc == 0 and f"resuming from {out / 'checkpoints' / 'last.pt'}: epoch 1, batch 6, step 6" in err, err
    # the same size, the words in another order: other weights' meaning, so not resumed
    lines = content.decode().splitlines()
    vocab.write_text("\n".join(lines[:4] + lines[4:][::-1]) + "\n", encoding="utf-8")
    (out / "model.pt").unlink()
    rc, err = cli(train_args(corpus, out), capsys)
    stale = out / "checkpoints" / "last.stale.pt"
    assert rc == 0 and "resuming" not in err
    assert (f"[train] {out / 'checkpoints' / 'last.pt'} belongs to another configuration (other source vocabulary "
            f"content); moved to {stale}, starting afresh") in err
    assert checkpoint.load(stale)["vocabularies"]["source"]["sha256"] == hashlib.sha256(content).hexdigest()
    assert checkpoint.load(out / "model.pt")["vocabularies"]["source"]["sha256"] == sha256(vocab)


# == 2. Every command refuses vocabularies the model was not trained with =====================

@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("case", ["other-experiment", "swapped", "shuffled"])
def test_mismatched_vocabularies_are_refused_naming_both_files(name, case, tiny_corpus, trained, vocabs, tmp_path,
                                                               capsys):
    model, c = trained / "model.pt", tiny_corpus
    if case == "other-experiment":
        src, tgt = vocabs["other"], c / "vocab.tgt"
        expected = mismatch(model, "source", c / "vocab.src", src)
    elif case == "swapped":
        src, tgt = c / "vocab.tgt", c / "vocab.src"
        expected = mismatch(model, "source", c / "vocab.src", src, swapped="target")
    else:
        src, tgt = vocabs["shuffled"], c / "vocab.tgt"
        assert len(src.read_text().splitlines()) == len((c / "vocab.src").read_text().splitlines())
        expected = mismatch(model, "source", c / "vocab.src", src)
    rc, err = cli(command(name, model, c, tmp_path, src, tgt), capsys)
    assert rc == 2
    assert err == f"nmtlib {name}: error: {expected}\n"
    assert list(tmp_path.iterdir()) == []  # nothing written, not even a folder


def test_a_target_vocabulary_alone_is_checked_too(tiny_corpus, trained, vocabs, tmp_path, capsys):
    model, c = trained / "model.pt", tiny_corpus
    rc, err = cli(command("translate", model, c, tmp_path, c / "vocab.src", vocabs["shuffled"]), capsys)
    # the shuffled file holds source words: not the target vocabulary's hash either
    assert rc == 2 and err == f"nmtlib translate: error: {mismatch(model, 'target', c / 'vocab.tgt', vocabs['shuffled'])}\n"


@pytest.mark.parametrize("name", COMMANDS)
def test_the_same_vocabulary_content_at_another_path_is_accepted(name, tiny_corpus, trained, vocabs, tmp_path,
                                                                 capsys):
    rc, err = cli(command(name, trained / "model.pt", tiny_corpus, tmp_path, vocabs["copy"],
                          tiny_corpus / "vocab.tgt"), capsys)
    assert rc == 0, err
    assert "warning" not in err and "error" not in err


def test_every_model_of_an_ensemble_is_checked(tiny_corpus, trained, vocabs, tmp_path, capsys):
    # a second real model, trained with the shuffled source vocabulary
    other = tmp_path / "other"
    assert cli(train_args(tiny_corpus, other, src_vocab=vocabs["shuffled"]), capsys)[0] == 0
    args = command("translate", trained / "model.pt", tiny_corpus, tmp_path, tiny_corpus / "vocab.src",
                   tiny_corpus / "vocab.tgt") + ["--model", str(other / "model.pt")]
    rc, err = cli(args, capsys)
    expected = mismatch(other / "model.pt", "source", vocabs["shuffled"], tiny_corpus / "vocab.src")
    assert rc == 2 and err == f"nmtlib translate: error: {expected}\n"
    assert not list(tmp_path.glob("test.*"))


def test_a_model_written_before_hashes_were_recorded_is_accepted_with_one_warning(tiny_corpus, trained, vocabs,
                                                                                   tmp_path, capsys):
    record = checkpoint.load(trained / "model.pt")
    del record["vocabularies"], record["training_data"]  # what model.pt held before this change
    old = tmp_path / "old" / "model.pt"
    old.parent.mkdir()
    torch.save(record, old)
    c = tiny_corpus
    rc, err = cli(command("translate", old, c, tmp_path, c / "vocab.src", c / "vocab.tgt"), capsys)
    assert rc == 0, err
    # one warning, before translate's lines on what it runs
    assert [line for line in err.splitlines() if not line.startswith("nmtlib translate: ")] == [
        f"warning: {old} records no vocabulary sha256 (written before nmtlib kept them); cannot check "
        f"that {c / 'vocab.src'} and {c / 'vocab.tgt'} are the vocabularies it was trained with"]
    assert (tmp_path / "test.txt").exists()
    # a vocabulary of another size cannot be the one it was trained with, hashes or not
    n_other, n_model = (len(p.read_text().splitlines()) for p in (vocabs["other"], c / "vocab.src"))
    assert n_other != n_model
    rc, err = cli(command("evaluate", old, c, tmp_path, vocabs["other"], c / "vocab.tgt"), capsys)
    assert rc == 2 and err == (f"nmtlib evaluate: error: {old} was trained with a source vocabulary of {n_model} "
                               f"words; {vocabs['other']} has {n_other}: {ADVICE}\n")


def test_a_checkpoint_written_before_hashes_were_recorded_is_resumed_with_a_warning(tiny_corpus, tmp_path, capsys):
    from nmtlib.commands.train import load_variant
    from nmtlib.train.trainer import config_fingerprint

    out = tmp_path / "model"
    assert cli(train_args(tiny_corpus, out), capsys)[0] == 0
    last = out / "checkpoints" / "last.pt"
    state = checkpoint.load(last)
    # what last.pt held before this change: no hashes, no epoch sums, the fingerprint of that time
    for key in ("vocabularies", "training_data", "epoch_sums"):
        del state[key]
    state["fingerprint"] = config_fingerprint(load_variant(json.dumps(SPEC)), 1, None)
    torch.save(state, last)
    (out / "model.pt").unlink()
    rc, err = cli(train_args(tiny_corpus, out), capsys)
    assert rc == 0 and f"resuming from {last}" in err
    assert (f"[train] warning: {last} records no vocabulary sha256 (written before nmtlib kept them); resuming it "
            f"with {tiny_corpus / 'vocab.src'} and {tiny_corpus / 'vocab.tgt'} unchecked") in err


# == 3. Unreadable model files ================================================================

def _bad_model(kind: str, real: Path, folder: Path) -> tuple[Path, str]:
    """A bad model file and the reason expected after ``<path>: ``."""
    path = folder / f"{kind}.pt"
    if kind == "empty":
        path.write_bytes(b"")
        return path, "cannot read this file: it is empty (0 bytes)"
    if kind == "truncated":
        data = real.read_bytes()
        path.write_bytes(data[: len(data) // 2])
        # then torch's reason in brackets (which depends on where the cut falls)
        return path, f"cannot read this file: an incomplete PyTorch archive of {len(data) // 2} bytes, probably truncated ("
    if kind == "no-variant":
        torch.save({"x": 1}, path)
        return path, "not an nmtlib model: no 'model', 'variant', 'src_vocab_size', 'tgt_vocab_size' in it (keys: x)"
    if kind == "tensor":
        torch.save(torch.zeros(3), path)
        return path, "not an nmtlib model: the file holds a Tensor, not a model record"
    if kind == "text":  # `--model README.md`: torch would advise weights_only=False, at length
        path.write_text("# nmt-attention-benchmarks\n")
        return path, "not an nmtlib model: not a file torch.save writes (it begins with '# nm'; a zip archive begins with 'PK')\n"
    assert kind == "last-checkpoint"  # checkpoints/last.pt passed for model.pt: a real mix-up
    shutil.copy(real.parent / "checkpoints" / "last.pt", path)
    return path, ("not an nmtlib model: a training checkpoint (no 'variant' in it, an 'optimizer'); pass the "
                  "model.pt of its model folder\n")


@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("kind", ["empty", "truncated", "no-variant", "tensor", "text", "last-checkpoint"])
def test_an_unreadable_model_file_is_one_line_naming_it(name, kind, tiny_corpus, trained, tmp_path, capsys):
    bad, reason = _bad_model(kind, trained / "model.pt", tmp_path)
    out = tmp_path / "out"
    out.mkdir()
    rc, err = cli(command(name, bad, tiny_corpus, out, tiny_corpus / "vocab.src", tiny_corpus / "vocab.tgt"), capsys)
    assert rc == 2
    assert err.startswith(f"nmtlib {name}: error: {bad}: {reason}") and err.count("\n") == 1, err
    assert list(out.iterdir()) == []


def test_a_truncated_last_checkpoint_is_set_aside_and_training_starts_afresh(tiny_corpus, trained, tmp_path,
                                                                            capsys):
    # torch reads a real checkpoint cut in half as an OSError (EINVAL), which stopped the run unnamed
    last = tmp_path / "checkpoints" / "last.pt"
    last.parent.mkdir()
    data = (trained / "checkpoints" / "last.pt").read_bytes()
    last.write_bytes(data[: len(data) // 2])
    rc, err = cli(train_args(tiny_corpus, tmp_path), capsys)
    assert rc == 0, err
    assert (f"[train] {last} cannot be read (cannot read this file: an incomplete PyTorch archive of "
            f"{len(data) // 2} bytes, probably truncated") in err and "starting afresh" in err
    assert (tmp_path / "checkpoints" / "last.corrupt.pt").stat().st_size == len(data) // 2
    assert checkpoint.load(last)["step"] == 6


# == 4. The learning curve after a resume =====================================================

LOG_SPEC = {
    "name": "g",
    "options": {
        "embedding_size": 16, "hidden_size": 16, "layers": 1, "attention": "global", "score": "general",
        "dropout": 0.1,
        # 100 batches an epoch: a kill soon after the first checkpoints lands well inside epoch 1
        "train": {"optimizer": "adam", "lr": 0.01, "loss_norm": "tokens", "batch_size": 4, "epochs": 2,
                  "checkpoint_every": 5, "decay_start": 2},
    },
}
#: the columns a resume must not change (speed and elapsed time are wall-clock measurements)
CURVE = ("epoch", "step", "lr", "train_ppl", "dev_ppl")


def train_cmd(corpus: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "nmtlib", *train_args(corpus, out, LOG_SPEC)]


def curve(out: Path) -> list[tuple[str, ...]]:
    with open(out / "train_log.csv", newline="") as f:
        return [tuple(row[k] for k in CURVE) for row in csv.DictReader(f)]


@pytest.fixture(scope="module")
def killed_mid_epoch(tiny_corpus, tmp_path_factory) -> tuple[Path, Path]:
    """An uninterrupted run, and a copy of the same run killed (SIGKILL) inside epoch 1, not resumed yet."""
    ref = tmp_path_factory.mktemp("log-ref")
    subprocess.run(train_cmd(tiny_corpus, ref), check=True, capture_output=True, timeout=600)
    out = tmp_path_factory.mktemp("log-killed")
    last = out / "checkpoints" / "last.pt"
    proc = subprocess.Popen(train_cmd(tiny_corpus, out), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.time() + 300
    while not last.exists() and proc.poll() is None and time.time() < deadline:
        time.sleep(0.01)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    state = checkpoint.load(last)
    assert state["epoch"] == 1 and 0 < state["batch_index"] < 100, "the kill was meant to land inside epoch 1"
    assert not (out / "model.pt").exists()
    return ref, out


def test_a_run_killed_mid_epoch_logs_the_same_learning_curve_after_resuming(tiny_corpus, killed_mid_epoch,
                                                                            tmp_path):
    ref, killed = killed_mid_epoch
    out = tmp_path / "resumed"
    shutil.copytree(killed, out)
    state = checkpoint.load(out / "checkpoints" / "last.pt")
    nll, tokens, _ = state["epoch_sums"]
    assert tokens > 0 and nll > 0  # the sums of the steps before the kill travel in the checkpoint
    resumed = subprocess.run(train_cmd(tiny_corpus, out), capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    assert f"resuming from {out / 'checkpoints' / 'last.pt'}: epoch 1, batch {state['batch_index']}" in resumed.stderr
    expected = curve(ref)
    assert [row[0] for row in expected] == ["1", "2"] and all(row[3] for row in expected)
    assert curve(out) == expected  # epoch 1's train_ppl covers the whole epoch, not the batches after the kill


def test_a_checkpoint_without_the_epoch_sums_leaves_that_epoch_train_ppl_empty(tiny_corpus, killed_mid_epoch,
                                                                              tmp_path):
    ref, killed = killed_mid_epoch
    out = tmp_path / "resumed-old"
    shutil.copytree(killed, out)
    last = out / "checkpoints" / "last.pt"
    state = checkpoint.load(last)
    del state["epoch_sums"]  # a checkpoint written before the sums were carried
    torch.save(state, last)
    resumed = subprocess.run(train_cmd(tiny_corpus, out), capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    expected = curve(ref)
    # epoch 1: not claimed (empty), rather than the perplexity of its second part only; epoch 2 whole again
    assert curve(out) == [(*expected[0][:3], "", expected[0][4]), expected[1]]


# == 5. align writes whole files ==============================================================

def test_align_writes_whole_files_and_a_refusal_keeps_the_previous_ones(tiny_corpus, trained, vocabs, tmp_path,
                                                                       capsys):
    c = tiny_corpus
    args = command("align", trained / "model.pt", c, tmp_path, c / "vocab.src", c / "vocab.tgt")
    rc, err = cli([*args, "--predicted-links-out", str(tmp_path / "test.predicted.links")], capsys)
    assert rc == 0, err
    # no temporary file left beside the outputs
    assert sorted(p.name for p in tmp_path.iterdir()) == ["test.links", "test.npz", "test.predicted.links"]
    n = len((c / "test.src").read_text().splitlines())
    with np.load(tmp_path / "test.npz") as npz:
        assert sorted(npz.files, key=int) == [str(i) for i in range(n)]
        tgt_len = len((c / "test.tgt").read_text().splitlines()[0].split())
        src_len = len((c / "test.src").read_text().splitlines()[0].split())
        assert npz["0"].shape == (tgt_len + 1, src_len)  # one row per target word and <eos>
    assert len((tmp_path / "test.links").read_text().splitlines()) == n
    before = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    rc, _ = cli(command("align", trained / "model.pt", c, tmp_path, vocabs["shuffled"], c / "vocab.tgt"), capsys)
    assert rc == 2 and {p.name: p.read_bytes() for p in tmp_path.iterdir()} == before
