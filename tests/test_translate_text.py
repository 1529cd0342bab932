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


#: a global-attention model trained 30 updates on the tiny corpus, for the raw-text tests
GLOBAL_SPEC = {"name": "g", "options": {"embedding_size": 16, "hidden_size": 16, "layers": 1, "attention": "global",
                                        "score": "general", "train": {"optimizer": "adam", "lr": 0.01, "batch_size": 32,
                                                                      "epochs": 1, "max_steps": 30}}}

def test_raw_text_is_tokenized_and_detokenized_as_recorded(tiny_corpus, tmp_path):
    """A model whose experiment tokenized with Moses (lowercased): raw text in, text out."""
    prep = {"src_lang": "en", "tgt_lang": "en", "src_tokenizer": "moses", "tgt_tokenizer": "moses",
            "lowercase": True, "escape": False}
    model = train_tiny_model(tiny_corpus, tmp_path / "m", GLOBAL_SPEC, "--preprocess-json", json.dumps(prep))
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


def test_raw_text_to_a_model_of_a_corpus_that_came_tokenized_needs_its_tokenizer(work):
    """The tiny experiment's corpus comes tokenized (it records tokenizer none), like
    small_parallel_enja's: a raw line is split at spaces only, which the banner says, and the last
    line counts the words the model does not know."""
    vocab = set((work / EXP / "vocab" / "src.txt").read_text(encoding="utf-8").split())
    first, second = (work / EXP / "data" / "test.src").read_text(encoding="utf-8").split()[:2]
    assert first in vocab and second in vocab and first + second not in vocab
    run = nmtlib("translate", "--model", MODEL, stdin=f"{first}{second} {second}\n", cwd=work)
    assert run.returncode == 0, run.stderr
    assert ("raw text in: tokenizer none (the model's), case kept (the model's); out: detokenizer none (the "
            "model's); the model's corpus came tokenized, so each line is split at spaces only: give raw text "
            "--src-tokenizer NAME") in run.stderr
    assert run.stderr.splitlines()[-1] == ("nmtlib translate: 1 line(s) translated; 1 of 2 source words (50%) not in "
                                           "the model's source vocabulary")
    # Japanese, as a person types it: one word at spaces, ten with MeCab + UniDic-lite (by hand:
    # 彼 / は / 水泳 / が / 得意 / で / は / なかっ / た / 。), none of them the synthetic corpus'
    japanese = "彼は水泳が得意ではなかった。\n"
    plain = nmtlib("translate", "--model", MODEL, stdin=japanese, cwd=work)
    segmented = nmtlib("translate", "--model", MODEL, "--src-tokenizer", "ja", stdin=japanese, cwd=work)
    assert plain.returncode == 0 and segmented.returncode == 0, plain.stderr + segmented.stderr
    assert plain.stderr.splitlines()[-1].endswith("translated; 1 of 1 source words (100%) not in the model's "
                                                  "source vocabulary")
    assert segmented.stderr.splitlines()[-1].endswith("translated; 10 of 10 source words (100%) not in the model's "
                                                      "source vocabulary")
    assert "raw text in: tokenizer ja (flag)" in segmented.stderr and "came tokenized" not in segmented.stderr


def test_tokenizer_flags_tokenize_raw_text_for_a_model_that_records_none(tiny_corpus, tmp_path):
    """--src-tokenizer moses --lowercase --tgt-tokenizer moses on a model that records none (a
    corpus that came tokenized and lowercased) is the tokens path with the text tokenized by hand."""
    prep = {"src_lang": "en", "tgt_lang": "en", "src_tokenizer": "none", "tgt_tokenizer": "none",
            "lowercase": False, "escape": False}
    model = train_tiny_model(tiny_corpus, tmp_path / "m", GLOBAL_SPEC, "--preprocess-json", json.dumps(prep))
    word = (tiny_corpus / "train.src").read_text().split()[0]
    flags = ["--src-tokenizer", "moses", "--lowercase", "--tgt-tokenizer", "moses"]
    raw = nmtlib("translate", "--model", str(model), "--beam", "2", *flags, stdin=f"{word.capitalize()}, {word}.\n")
    tokens = nmtlib("translate", "--model", str(model), "--beam", "2", "--tokenized", stdin=f"{word} , {word} .\n")
    assert raw.returncode == 0 and tokens.returncode == 0, raw.stderr + tokens.stderr
    from sacremoses import MosesDetokenizer

    assert raw.stdout == MosesDetokenizer(lang="en").detokenize(tokens.stdout.split()) + "\n"
    assert "raw text in: tokenizer moses (flag), lowercased (flag); out: detokenizer moses (flag)" in raw.stderr
    # the comma and the period are not words of the synthetic corpus
    assert raw.stderr.splitlines()[-1].endswith("translated; 2 of 4 source words (50%) not in the model's "
                                                "source vocabulary")


@pytest.mark.parametrize("extra, message", [
    (["--tokenized"], "--src-tokenizer: for raw text in text mode, not with --tokenized"),
    (["--out", "x", "--src", "y"], "--src-tokenizer: for raw text in text mode, not with --out (files mode reads tokens)"),
])
def test_tokenizer_flags_are_for_raw_text(work, extra, message):
    run = nmtlib("translate", "--model", MODEL, "--src-tokenizer", "ja", *extra, stdin="a\n", cwd=work)
    assert run.returncode == 2 and run.stderr.strip().endswith(message), run.stderr
