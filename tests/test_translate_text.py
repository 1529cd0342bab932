"""``nmtlib translate`` for people (issue #29, item 2): a model file carries its vocabularies and
how its text was tokenized, and a model in an experiment's results decodes with the experiment's
settings (models/<variant>/decode.json), so ``echo SENTENCE | nmtlib translate --model model.pt``
prints a translation.

The tiny experiment (tests/configs/tiny.yaml) runs through the real workflow to one model, its
settings and the workflow's own translation of the test set, which text mode must reproduce.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
import torch

from conftest import ROOT, train_tiny_model

TINY = ROOT / "tests" / "configs" / "tiny.yaml"
EXP = "results/tiny"
MODEL = f"{EXP}/models/global-general-feed/seed1/model.pt"
SETTINGS = f"{EXP}/models/global-general-feed/decode.json"
WORKFLOW_OUT = f"{EXP}/translations/global-general-feed/seed1/test.beam3"


def nmtlib(*args: str, stdin: str | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "nmtlib", *args], input=stdin, capture_output=True, text=True,
                          cwd=cwd, timeout=300)


@pytest.fixture(scope="module")
def work(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("translate-text")
    run = subprocess.run([sys.executable, "-m", "snakemake", "-s", str(ROOT / "Snakefile"), "--directory", str(work),
                          "--cores", "2", MODEL, SETTINGS, f"{WORKFLOW_OUT}.txt", "--configfile", str(TINY)],
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    return work


def test_the_workflow_keeps_each_variants_decoding_settings_beside_its_models(work):
    settings = json.loads((work / SETTINGS).read_text())
    # tiny.yaml: decode {beam: 3, batch_size: 16, max_len_ratio: 1.2}; the rest are the defaults
    assert (settings["beam"], settings["batch_size"], settings["max_len_ratio"], settings["tau"]) == (3, 16, 1.2, None)
    assert settings["unk_replace"] is True


def test_the_model_file_carries_its_vocabularies_and_tokenization(work):
    record = torch.load(work / MODEL, map_location="cpu", weights_only=True)
    vocab = (work / EXP / "vocab" / "src.txt").read_text(encoding="utf-8").splitlines()
    assert record["vocabulary_words"]["source"] == vocab
    assert record["preprocess"] == {"src_lang": "src", "tgt_lang": "tgt", "src_tokenizer": "none",
                                    "tgt_tokenizer": "none", "lowercase": False, "escape": False}


def test_a_sentence_on_stdin_is_translated_as_the_experiment_translated_it(work):
    source = (work / EXP / "data" / "test.src").read_text(encoding="utf-8").splitlines()
    expected = (work / f"{WORKFLOW_OUT}.unk.txt").read_text(encoding="utf-8").splitlines()
    one = nmtlib("translate", "--model", MODEL, stdin=source[0] + "\n", cwd=work)
    assert one.returncode == 0, one.stderr
    assert one.stdout.splitlines() == [expected[0]]
    assert "beam 3" in one.stderr and "decode.json" in one.stderr
    # many lines, in their order (decoded sorted by length, in batches)
    many = nmtlib("translate", "--model", MODEL, "--no-progress", stdin="\n".join(source[:12]) + "\n", cwd=work)
    assert many.returncode == 0, many.stderr
    assert many.stdout.splitlines() == expected[:12]


def test_flags_override_the_experiments_settings(work):
    source = (work / EXP / "data" / "test.src").read_text(encoding="utf-8").splitlines()[:5]
    greedy = nmtlib("translate", "--model", MODEL, "--beam", "1", stdin="\n".join(source) + "\n", cwd=work)
    assert greedy.returncode == 0 and "beam 1" in greedy.stderr
    files = nmtlib("translate", "--model", MODEL, "--src", str(work / EXP / "data" / "test.src"),
                   "--out", str(work / "beam1"), "--beam", "1", "--no-progress", cwd=work)
    assert files.returncode == 0, files.stderr
    assert greedy.stdout.splitlines() == (work / "beam1.unk.txt").read_text().splitlines()[:5]


def test_raw_text_is_tokenized_and_detokenized_as_recorded(tiny_corpus, tmp_path):
    """A model whose experiment tokenized with Moses (lowercased): raw text in, text out."""
    spec = {"name": "g", "options": {"embedding_size": 16, "hidden_size": 16, "layers": 1, "attention": "global",
                                     "score": "general", "train": {"optimizer": "adam", "lr": 0.01, "batch_size": 32,
                                                                   "epochs": 1, "max_steps": 30}}}
    prep = {"src_lang": "en", "tgt_lang": "en", "src_tokenizer": "moses", "tgt_tokenizer": "moses",
            "lowercase": True, "escape": False}
    model = train_tiny_model(tiny_corpus, tmp_path / "m", spec, "--preprocess-json", json.dumps(prep))
    word = (tiny_corpus / "train.src").read_text().split()[0]
    # by hand: Moses splits the comma and the final period off, and lowercasing undoes the capital
    raw = nmtlib("translate", "--model", str(model), "--beam", "2", stdin=f"{word.capitalize()}, {word}.\n")
    tokens = nmtlib("translate", "--model", str(model), "--beam", "2", "--tokenized", stdin=f"{word} , {word} .\n")
    assert raw.returncode == 0 and tokens.returncode == 0, raw.stderr + tokens.stderr
    from sacremoses import MosesDetokenizer

    assert raw.stdout == MosesDetokenizer(lang="en").detokenize(tokens.stdout.split()) + "\n"


def test_without_a_tokenization_record_text_mode_asks_for_tokens(tiny_corpus, tmp_path):
    spec = {"name": "g", "options": {"embedding_size": 8, "hidden_size": 8, "layers": 1, "attention": "none",
                                     "input_feed": False, "train": {"optimizer": "adam", "max_steps": 2}}}
    model = train_tiny_model(tiny_corpus, tmp_path / "m", spec)  # no --preprocess-json
    run = nmtlib("translate", "--model", str(model), stdin="a b\n")
    assert run.returncode == 2 and "records no tokenization" in run.stderr and "--tokenized" in run.stderr
    assert nmtlib("translate", "--model", str(model), "--tokenized", stdin="a b\n").returncode == 0
