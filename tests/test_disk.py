"""A finished model folder holds one copy of its weights (issue #42, item 3).

Training keeps ``checkpoints/best.pt`` (the weights of the best dev perplexity so far) and
``checkpoints/last.pt`` (the resume state) while it runs. When it ends, ``best.pt`` becomes
``model.pt`` and the resume state goes, unless ``train.keep_checkpoints`` asks to keep it; then
``model.pt`` is a second name of ``best.pt`` (one copy on disk). ``keep_checkpoints`` decides what
happens to files, not the weights: it stays out of the checkpoint fingerprint, so a training
resumed under a config that sets it still finds its ``last.pt``.
"""

from __future__ import annotations

import csv
import json
import subprocess
from pathlib import Path

import torch

from conftest import TINY_TRAIN_SPEC, tiny_train_cmd
from nmtlib import checkpoint
from nmtlib.config import resolve_variant
from nmtlib.train.trainer import config_fingerprint


def spec_with(**train) -> dict:
    spec = json.loads(json.dumps(TINY_TRAIN_SPEC))
    spec["options"]["train"].update(train)
    return spec


def train(corpus: Path, out: Path, spec: dict) -> subprocess.CompletedProcess:
    run = subprocess.run(tiny_train_cmd(corpus, out, spec), capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return run


def files(folder: Path) -> list[str]:
    return sorted(str(p.relative_to(folder)) for p in folder.rglob("*"))


def test_a_finished_model_folder_keeps_the_best_weights_once_and_no_resume_state(tiny_corpus, tmp_path):
    out = tmp_path / "m"
    train(tiny_corpus, out, spec_with(eval_every=2))  # 6 updates, dev perplexity at steps 2, 4, 6
    assert files(out) == ["env.json", "model.pt", "train_log.csv"]
    # model.pt holds the best weights: the step of the lowest dev perplexity in the log
    rows = list(csv.DictReader((out / "train_log.csv").open()))
    best = min(rows, key=lambda row: float(row["dev_ppl"]))
    record = checkpoint.load(out / "model.pt")
    assert (record["step"], round(record["dev_ppl"], 4)) == (int(best["step"]), float(best["dev_ppl"]))


def test_keep_checkpoints_keeps_the_resume_state_and_still_one_copy_of_the_weights(tiny_corpus, tmp_path):
    out = tmp_path / "m"
    train(tiny_corpus, out, spec_with(keep_checkpoints=True))
    assert files(out) == ["checkpoints", "checkpoints/best.pt", "checkpoints/last.pt", "env.json", "model.pt",
                          "train_log.csv"]
    model, best = (out / "model.pt").stat(), (out / "checkpoints" / "best.pt").stat()
    assert (model.st_ino, model.st_dev) == (best.st_ino, best.st_dev) and model.st_nlink == 2  # du counts it once
    # a second run resumes the finished state and trains no more
    again = train(tiny_corpus, out, spec_with(keep_checkpoints=True))
    assert "resuming from" in again.stderr
    assert checkpoint.load(out / "model.pt")["step"] == checkpoint.load(out / "checkpoints" / "best.pt")["step"]


def test_the_same_weights_with_and_without_keep_checkpoints(tiny_corpus, tmp_path):
    kept, plain = tmp_path / "kept", tmp_path / "plain"
    train(tiny_corpus, kept, spec_with(keep_checkpoints=True))
    train(tiny_corpus, plain, spec_with())
    a, b = checkpoint.load(kept / "model.pt")["model"], checkpoint.load(plain / "model.pt")["model"]
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_setting_keep_checkpoints_resumes_a_checkpoint_written_without_it(tiny_corpus, tmp_path):
    """The resume state of a run with keep_checkpoints is resumed by a run without it: the option
    is not part of what the weights are (then that run, finished, removes it)."""
    out = tmp_path / "m"
    train(tiny_corpus, out, spec_with(keep_checkpoints=True, max_steps=3))
    again = train(tiny_corpus, out, spec_with(max_steps=3))  # the same weights, another file policy
    assert "belongs to another configuration" not in again.stderr and "resuming from" in again.stderr
    assert not (out / "checkpoints").exists()


def test_keep_checkpoints_leaves_the_checkpoint_fingerprint_as_it_was():
    """Fingerprints computed at commit 58f49a4, before keep_checkpoints existed: a run in progress
    when it was added keeps its last.pt."""
    train = {"optimizer": "adam", "lr": 0.003, "loss_norm": "tokens", "batch_size": 64, "epochs": 12, "patience": 1}
    variants = {"flexible": {"arch": "shu", "attention": "flexible", "embedding_size": 128, "hidden_size": 128,
                             "output_size": 128, "decode": {"taus": [1.2]}},
                "flexible-ft": {"finetune_from": "flexible", "train": {"beta": 0.1, "epochs": 4}}}
    before = {"flexible": ("8ca8609f9577387e", "6f45e80fc6132b15", "d8d28e62064b3650"),
              "flexible-ft": ("3702f7ac03334a0d", "86b83104e60c38a6", "d88feb66fa05a622")}
    for keep in ({}, {"keep_checkpoints": True}, {"keep_checkpoints": False}):
        for name, options in variants.items():
            v = resolve_variant(name, options, {**train, **keep}, {"beam": 5}, variants)
            assert v.train.keep_checkpoints is keep.get("keep_checkpoints", False)
            assert (config_fingerprint(v, 1, None, ("a" * 64, "b" * 64)), config_fingerprint(v, 2, Path("p/model.pt")),
                    config_fingerprint(v, 1, None)) == before[name], (name, keep)
